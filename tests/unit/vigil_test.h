/*
 * vigil_test.h - what every cmocka test program includes first.
 */
#ifndef VIGIL_TEST_H
#define VIGIL_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#endif
