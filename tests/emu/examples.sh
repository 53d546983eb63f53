#!/bin/sh
# The examples built against the emulator (build/emu/ex), each once with small sizes.
exec sh tests/examples_smoke.sh build/emu/ex "emu "
