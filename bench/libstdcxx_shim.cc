// Lets the llama-cpp-cffi wheel (built with GCC 14) load against GCC 12's libstdc++ for
// bench_gguf_export.py: GCC 14 calls this when an exception leaves a noexcept function, and
// GCC 12's runtime has no such symbol. It does what GCC 14's does: terminate.
#include <exception>

extern "C" void __cxa_call_terminate(void*) noexcept { std::terminate(); }
