// toolfit's judge: asks llama.cpp's own converter and grammar engine about schemas.
// Reads JSON lines {"schema": S, "instances": [I...]} on stdin; writes one line per input:
//   {"ok":true,"accepts":[bool...]}  or  {"ok":false,"stage":"convert"|"grammar","error":"..."}
// Instances are matched as their compact JSON text. Compiled against several llama.cpp generations;
// build.sh passes the TJ_* macros that select the internal API of the vendored sources.
#include "json-schema-to-grammar.h"
#if TJ_COMMON_JSON
#include "json.h"
typedef common_json Json;
static std::string esc(const std::string & s) { return common_json(s).dump_safe(); }
#else
#if TJ_VENDORED_NLOHMANN
#include <nlohmann/json.hpp>
#endif
typedef nlohmann::ordered_json Json;
static std::string esc(const std::string & s) {
    return Json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
}
#endif
#include "llama-grammar.h"
#if TJ_GRAMMAR == 1
#include "grammar-parser.h"
#endif
#include "unicode.h"
#include <iostream>
#include <memory>
#include <string>

namespace {

llama_grammar * compile(const std::string & text) {
#if TJ_GRAMMAR == 1
    auto state = grammar_parser::parse(text.c_str());
    if (state.rules.empty() || !state.symbol_ids.count("root")) return nullptr;
    auto rules = state.c_rules();
    return llama_grammar_init_impl(rules.data(), rules.size(), state.symbol_ids.at("root"));
#elif TJ_GRAMMAR == 2
    return llama_grammar_init_impl(nullptr, text.c_str(), "root");
#else
    return llama_grammar_init_impl(nullptr, text.c_str(), "root", false, nullptr, 0, nullptr, 0);
#endif
}

struct Grammar {
    llama_grammar * g;
    explicit Grammar(const std::string & text) : g(compile(text)) {}
    ~Grammar() { if (g) llama_grammar_free_impl(g); }
};

bool accepts(llama_grammar * g, const std::string & text) {
    auto & stacks = llama_grammar_get_stacks(g);
    for (uint32_t cp : unicode_cpts_from_utf8(text)) {
#if TJ_STACKS
        llama_grammar_stacks next;
        llama_grammar_accept(llama_grammar_get_rules(g), stacks, cp, next);
        stacks = next;
#else
        llama_grammar_accept(g, cp);
#endif
        if (stacks.empty()) return false;
    }
    for (const auto & s : stacks) {
        if (s.empty()) return true;
    }
    return false;
}

}  // namespace

int main() {
    std::string line;
    while (std::getline(std::cin, line)) {
        if (line.empty()) continue;
        Json item;
        std::string gbnf;
        try {
            item = Json::parse(line);
            gbnf = json_schema_to_grammar(item.at("schema"));
        } catch (const std::exception & e) {
            std::cout << "{\"ok\":false,\"stage\":\"convert\",\"error\":" << esc(e.what()) << "}" << std::endl;
            continue;
        }
        bool parsed = false;
        try { Grammar probe(gbnf); parsed = probe.g != nullptr; } catch (const std::exception &) { parsed = false; }
        if (!parsed) {
            std::cout << "{\"ok\":false,\"stage\":\"grammar\",\"error\":\"llama.cpp refused the grammar\"}" << std::endl;
            continue;
        }
        std::string out = "{\"ok\":true,\"accepts\":[";
        if (item.contains("instances")) {
            size_t i = 0;
            for (const auto & inst : item.at("instances")) {
                bool ok = false;
                try { Grammar g(gbnf); ok = g.g && accepts(g.g, inst.dump()); } catch (...) { ok = false; }
                out += (i++ ? "," : "");
                out += ok ? "true" : "false";
            }
        }
        std::cout << out << "]}" << std::endl;
    }
    return 0;
}
