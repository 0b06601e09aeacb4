// libFuzzer's entry for programs with a main of their own (compiler-rt's FuzzerInterface.h).
#ifndef SCROLLSYNC_CFUZZDRIVER_H
#define SCROLLSYNC_CFUZZDRIVER_H
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
