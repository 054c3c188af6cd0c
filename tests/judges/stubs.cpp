// What the converter and grammar engine link against outside the files build.sh compiles: string
// helpers from common.cpp, ggml's abort hook (turned into an exception), logging, and a vocabulary
// that is never consulted (the judge feeds code points, not tokens).
#include "llama-vocab.h"
#include "llama-impl.h"
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

std::string string_join(const std::vector<std::string> & parts, const std::string & sep) {
    std::string r;
    for (size_t i = 0; i < parts.size(); ++i) { if (i) r += sep; r += parts[i]; }
    return r;
}
std::vector<std::string> string_split(const std::string & s, const std::string & sep) {
    std::vector<std::string> out;
    size_t from = 0;
    for (size_t at; (at = s.find(sep, from)) != std::string::npos; from = at + sep.size()) out.push_back(s.substr(from, at - from));
    out.push_back(s.substr(from));
    return out;
}
std::string string_repeat(const std::string & s, size_t n) {
    std::string r;
    r.reserve(s.size() * n);
    while (n--) r += s;
    return r;
}
extern "C" void ggml_abort(const char * file, int line, const char * fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + msg);
}
void llama_log_internal(ggml_log_level, const char *, ...) {}
#if TJ_GRAMMAR <= 2
extern "C" int64_t ggml_time_us(void) {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
bool llama_token_is_eog_impl(const struct llama_vocab &, llama_token) { throw std::logic_error("no vocabulary"); }
#else
bool llama_vocab::is_eog(llama_token) const { throw std::logic_error("no vocabulary"); }
const std::string & llama_vocab::token_to_piece(llama_token) const { throw std::logic_error("no vocabulary"); }
int32_t llama_vocab::tokenize(const char *, int32_t, llama_token *, int32_t, bool, bool) const { throw std::logic_error("no vocabulary"); }
#endif
