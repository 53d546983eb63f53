#!/bin/sh
# `make install` into a temporary prefix, then a pkg-config build and a CMake
# project (find_package(devtensor): the shared and the static library) compile
# tests/packaging/consumer.c against it, as docs/API.md says to, and run it
# (the documentation's find_package lines are checked too). A missing pkg-config or
# cmake is a SKIP (.ci/run installs both).
passed=0; failed=0; skipped=0
pass() { echo "PASS packaging: $1"; passed=$((passed + 1)); }
fail() { echo "FAIL packaging: $1"; failed=$((failed + 1)); }
skip() { echo "SKIP packaging: $1"; skipped=$((skipped + 1)); }
# a consumer's own lines, folded into ours
run() {
  out=$("$@" 2>&1); rc=$?
  printf '%s\n' "$out" | grep -v '^[0-9]* passed'
  line=$(printf '%s\n' "$out" | grep '^[0-9]* passed, [0-9]* failed, [0-9]* skipped$' | tail -n 1)
  if [ $rc -ne 0 ] || [ -z "$line" ]; then fail "$* exited with status $rc"; return; fi
  passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/devtensor-pkg.XXXXXX") || { echo "FAIL packaging: mktemp"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL ${MAKE:-make} -s --no-print-directory install PREFIX="$prefix" ${DT_CUDA:+CUDA=$DT_CUDA} ${CC:+CC=$CC} >"$tmp/install.log" 2>&1; then
  ok=1
  for f in include/devtensor.h lib/libdevtensor.so lib/libdevtensor.a lib/pkgconfig/devtensor.pc lib/cmake/devtensor/devtensorConfig.cmake; do
    [ -e "$prefix/$f" ] || { fail "make install left no $f"; ok=0; }
  done
  [ $ok = 1 ] && pass "make install PREFIX=<tmp> installs the header, both libraries, devtensor.pc and the CMake package"
  # the soname: libdevtensor.so.MAJOR, or .so.0.MINOR while the major is 0 (0.Y is compatible with 0.Y only)
  maj=$(sed -n 's/^#define DEVTENSOR_VERSION_MAJOR \([0-9]*\).*/\1/p' devtensor.h)
  min=$(sed -n 's/^#define DEVTENSOR_VERSION_MINOR \([0-9]*\).*/\1/p' devtensor.h)
  if [ "$maj" = 0 ]; then so="libdevtensor.so.0.$min"; else so="libdevtensor.so.$maj"; fi
  if command -v objdump >/dev/null 2>&1; then
    got=$(objdump -p "$prefix/lib/libdevtensor.so" | sed -n 's/^ *SONAME *//p')
    if [ "$got" = "$so" ] && [ -e "$prefix/lib/$so" ]; then pass "the soname is $so, installed as a link"
    else fail "the soname is '$got' (want $so), $so installed: $([ -e "$prefix/lib/$so" ] && echo yes || echo no)"; fi
  else skip "no objdump to read the soname"; fi
else
  cat "$tmp/install.log"; fail "make install PREFIX=<tmp> failed"
  echo "$passed passed, $failed failed, $skipped skipped"; exit 1
fi
cc=${CC:-cc}
if command -v pkg-config >/dev/null 2>&1; then
  export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
  # as docs/API.md says: the rpath from pkg-config's libdir, so that the program finds the library when it starts
  if $cc -std=c99 -Wall -Wextra -Werror tests/packaging/consumer.c $(pkg-config --cflags --libs devtensor) \
       -Wl,-rpath,"$(pkg-config --variable=libdir devtensor)" -o "$tmp/consumer_pc" 2>"$tmp/pc.log"; then
    pass "cc consumer.c \$(pkg-config --cflags --libs devtensor) -Wl,-rpath,\$(pkg-config --variable=libdir devtensor) builds"
    run "$tmp/consumer_pc" "pkg-config"
  else cat "$tmp/pc.log"; fail "the pkg-config build failed"; fi
  v=$(pkg-config --modversion devtensor)
  want=$(sed -n 's/^#define DEVTENSOR_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' devtensor.h | paste -sd. -)
  if [ "$v" = "$want" ]; then pass "pkg-config --modversion devtensor is $v"; else fail "pkg-config --modversion says $v, the header $want"; fi
else
  skip "no pkg-config on this machine (apt-get install pkg-config)"
fi
# the documentation's find_package lines name no version, or the header's major.minor
want=$(sed -n 's/^#define DEVTENSOR_VERSION_MAJOR \([0-9]*\).*/\1/p' devtensor.h).$(sed -n 's/^#define DEVTENSOR_VERSION_MINOR \([0-9]*\).*/\1/p' devtensor.h)
bad=$(grep -Hn 'find_package(devtensor' README.md docs/*.md 2>/dev/null | grep -v "find_package(devtensor \(REQUIRED\|$want REQUIRED\)")
if [ -z "$bad" ]; then pass "the documentation's find_package(devtensor ...) lines ask for no version or $want"
else fail "the documentation's find_package(devtensor ...) asks for another version than $want:"; printf '%s\n' "$bad"; fi
if command -v cmake >/dev/null 2>&1; then
  want=$(sed -n 's/^#define DEVTENSOR_VERSION_MAJOR \([0-9]*\).*/\1/p' devtensor.h).$(sed -n 's/^#define DEVTENSOR_VERSION_MINOR \([0-9]*\).*/\1/p' devtensor.h)
  if cmake -S tests/packaging -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DDT_WANT_VERSION="$want" -DCMAKE_C_COMPILER="$(command -v $cc)" >"$tmp/cmake.log" 2>&1 \
     && cmake --build "$tmp/cmake" >>"$tmp/cmake.log" 2>&1; then
    pass "a CMake project with find_package(devtensor $want) and devtensor::devtensor(_static) builds"
    run "$tmp/cmake/consumer_shared" "cmake, shared"
    run "$tmp/cmake/consumer_static" "cmake, static"
  else cat "$tmp/cmake.log"; fail "the CMake build failed"; fi
else
  skip "no cmake on this machine (apt-get install cmake)"
fi
# a dlpack.h included before devtensor.h (its types then come from there): the system's
# (dlpack/dlpack.h, 1.x) or PyTorch's ATen/dlpack.h (0.6, without the versioned struct)
found=0
for h in dlpack/dlpack.h ATen/dlpack.h; do
  printf '#include <%s>\n#include <devtensor.h>\nint main(void) { struct DLManagedTensorVersioned *m = 0; DLManagedTensor *l = 0; return (m != 0) + (l != 0) + (DLPACK_FLAG_BITMASK_READ_ONLY != 1); }\n' "$h" > "$tmp/dl.c"
  if printf '#include <%s>\n' "$h" | $cc -E -x c - >/dev/null 2>&1; then
    found=1
    if $cc -std=c99 -pedantic -Wall -Wextra -Werror -I"$prefix/include" "$tmp/dl.c" -L"$prefix/lib" -ldevtensor -o "$tmp/dl" 2>"$tmp/dl.log" \
       && ${CXX:-c++} -x c++ -std=c++17 -Wall -Wextra -Werror -I"$prefix/include" "$tmp/dl.c" -fsyntax-only 2>>"$tmp/dl.log"; then
      pass "<$h> included before devtensor.h builds (C99 and C++17)"
    else cat "$tmp/dl.log"; fail "<$h> included before devtensor.h does not build"; fi
  fi
done
[ $found = 1 ] || skip "no dlpack.h on this machine to include before devtensor.h"
# upstream's dlpack.h 1.x declares struct DLManagedTensorVersioned without a typedef: the
# bare name (as README writes it) must still work in C, in either include order. A
# header of the same shape (declarations only, written here) stands in for it.
mkdir -p "$tmp/dlup/dlpack"
cat > "$tmp/dlup/dlpack/dlpack.h" <<'EOF_DL'
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_
#include <stdint.h>
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
typedef struct { uint32_t major; uint32_t minor; } DLPackVersion;
typedef enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3 } DLDeviceType;
typedef struct { DLDeviceType device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct { void *data; DLDevice device; int32_t ndim; DLDataType dtype; int64_t *shape; int64_t *strides; uint64_t byte_offset; } DLTensor;
typedef struct DLManagedTensor { DLTensor dl_tensor; void *manager_ctx; void (*deleter)(struct DLManagedTensor *self); } DLManagedTensor;
struct DLManagedTensorVersioned {
  DLPackVersion version; void *manager_ctx; void (*deleter)(struct DLManagedTensorVersioned *self); uint64_t flags; DLTensor dl_tensor;
};
#endif
EOF_DL
for order in "dlpack/dlpack.h devtensor.h" "devtensor.h dlpack/dlpack.h"; do
  set -- $order
  cat > "$tmp/bare.c" <<EOF_C
#include <$1>
#include <$2>
#include <stdio.h>
int main(void) {
  dt_tensor *t = dt_ones(dt_shape1(3), dt_cpu());
  DLManagedTensorVersioned *m = dt_to_dlpack(t);
  int ok = m && m->version.major == 1 && m->dl_tensor.ndim == 1 && m->dl_tensor.shape[0] == 3;
  dt_release(t);
  if (m) m->deleter(m);
  printf("%s\n%d passed, %d failed, 0 skipped\n", ok ? "PASS bare DLManagedTensorVersioned" : "FAIL bare DLManagedTensorVersioned", ok, !ok);
  return !ok;
}
EOF_C
  if $cc -std=c99 -pedantic -Wall -Wextra -Werror -I"$tmp/dlup" -I"$prefix/include" "$tmp/bare.c" -L"$prefix/lib" -ldevtensor \
       -Wl,-rpath,"$prefix/lib" -o "$tmp/bare" 2>"$tmp/bare.log" \
     && ${CXX:-c++} -x c++ -std=c++17 -Wall -Wextra -Werror -I"$tmp/dlup" -I"$prefix/include" "$tmp/bare.c" -fsyntax-only 2>>"$tmp/bare.log"; then
    pass "an upstream-shaped dlpack.h 1.x and devtensor.h ($1 first): DLManagedTensorVersioned *m = dt_to_dlpack(t) builds (C99 and C++17)"
    run "$tmp/bare" "bare name, $1 first"
  else cat "$tmp/bare.log"; fail "an upstream-shaped dlpack.h 1.x and devtensor.h ($1 first): the bare DLManagedTensorVersioned does not build"; fi
done
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
