// The demo catalogue's four index ids, in the order `dix serve` lists them. The CLI's catalogue
// (runtime/cli/catalogue.*) makes and registers those indexes; `dix serve --indexes` and
// `dix bench failover --indexes` choose among them. One list for both, so they cannot drift.
// Standard library only.
#pragma once

#include <string>
#include <vector>

namespace dix::tool {

inline constexpr const char* by_category_id = "by-category";
inline constexpr const char* by_brand_id = "by-brand";
inline constexpr const char* fulltext_id = "fulltext";
inline constexpr const char* similar_id = "similar";

inline const std::vector<std::string>& catalogue_ids() {
  static const std::vector<std::string> ids{by_category_id, by_brand_id, fulltext_id, similar_id};
  return ids;
}

}  // namespace dix::tool
