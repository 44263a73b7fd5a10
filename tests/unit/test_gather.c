#include "vigil_test.h"
/* placeholder: replaced by the module's tests */
int main(void) { return 0; }
