// SPDX-License-Identifier: Apache-2.0
#include "static_routes.hpp"

#include "dashboard_files.hpp"
#include "http_util.hpp"

#include <string>

namespace weir::server::internal {

void add_static_routes(router& routes) {
  routes.get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    json_reply(res, 200, R"({"status":"ok"})");
  });
  routes.get(R"(/(|index\.html|app\.js|style\.css))",
             [](const httplib::Request& req, httplib::Response& res) {
               std::string name = req.matches[1];
               if (name.empty())
                 name = "index.html";
               const auto* file = find_dashboard_file(name);
               if (!file) {
                 json_error(res, 404, "not found: " + req.path);
                 return;
               }
               res.set_header("Cache-Control", "no-cache");
               res.set_content(std::string{file->content}, file->content_type);
             });
}

} // namespace weir::server::internal
