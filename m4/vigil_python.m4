# vigil_python.m4 - where `make install` puts the Python helper.
#
# VIGIL_PYTHON_SITEDIR sets PYTHON_SITEDIR, the directory vigil_timing.py
# is installed in, so that the system's python3 imports it without
# PYTHONPATH:
#   --with-python-sitedir=DIR   DIR, as given;
#   otherwise the first directory of python3's own search path (sys.path,
#   read with -I: no PYTHONPATH, no user site) that lies in PREFIX/lib/:
#   /usr/lib/python3/dist-packages for --prefix=/usr and
#   /usr/local/lib/python3.X/dist-packages for /usr/local on Debian,
#   /usr/lib/python3.X/site-packages on Fedora;
#   otherwise (a prefix python3 does not search, such as /opt/vigil)
#   PREFIX/lib/python3.X/site-packages, which then needs PYTHONPATH, as
#   configure says.
# A directory below PREFIX is written as ${prefix}/..., as automake's own
# directories are.  PYTHON names the interpreter (default: python3 in PATH).
AC_DEFUN([VIGIL_PYTHON_SITEDIR], [
AC_ARG_VAR([PYTHON], [the python3 whose search path the Python helper joins])
AC_PATH_PROGS([PYTHON], [python3], [])
AC_ARG_WITH([python-sitedir],
  [AS_HELP_STRING([--with-python-sitedir=DIR],
    [install the Python helper vigil_timing.py in DIR (default: the directory under PREFIX that python3 searches)])],
  [], [with_python_sitedir=auto])
vigil_py_prefix=$prefix
AS_IF([test "x$vigil_py_prefix" = xNONE], [vigil_py_prefix=$ac_default_prefix])
vigil_py_searched=no
AS_CASE([$with_python_sitedir],
  [auto|yes|""], [
    # Two lines: whether python3 searches the directory, and the directory,
    # with ${prefix} for PREFIX.
    vigil_py_out=
    AS_IF([test -n "$PYTHON"], [vigil_py_out=`"$PYTHON" -I -c '
import sys, sysconfig
prefix = sys.argv[[1]].rstrip("/")
found = [[d for d in sys.path if d.startswith(prefix + "/lib/") and d.endswith("-packages")]]
d = found[[0]] if found else sysconfig.get_path("purelib", "posix_prefix", vars={"base": prefix})
print("yes" if found else "no")
print("${prefix}" + d[[len(prefix):]] if d.startswith(prefix + "/") else d)
print(d)
' "$vigil_py_prefix" 2>/dev/null`])
    vigil_py_searched=`echo "$vigil_py_out" | sed -n 1p`
    PYTHON_SITEDIR=`echo "$vigil_py_out" | sed -n 2p`
    vigil_py_dir=`echo "$vigil_py_out" | sed -n 3p`
    AS_IF([test -z "$PYTHON_SITEDIR"],
      [vigil_py_searched=no
       PYTHON_SITEDIR='${prefix}/lib/python3/site-packages'
       vigil_py_dir=$vigil_py_prefix/lib/python3/site-packages])],
  [no], [AC_MSG_ERROR([--without-python-sitedir: the Python helper is part of vigil; name a directory])],
  [/*], [PYTHON_SITEDIR=$with_python_sitedir; vigil_py_dir=$with_python_sitedir; vigil_py_searched=given],
  [AC_MSG_ERROR([--with-python-sitedir=$with_python_sitedir: give an absolute directory])])
AC_MSG_CHECKING([where to install the Python helper])
AC_MSG_RESULT([$vigil_py_dir])
AS_IF([test "x$vigil_py_searched" = xno],
  [AC_MSG_WARN([${PYTHON:-python3} does not search $vigil_py_dir: `import vigil_timing' will need PYTHONPATH=$vigil_py_dir (or --with-python-sitedir)])])
AC_SUBST([PYTHON_SITEDIR])
])
