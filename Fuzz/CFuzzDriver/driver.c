// Intentionally empty: the header declares libFuzzer's driver, which -sanitize=fuzzer links.
#include "CFuzzDriver.h"
