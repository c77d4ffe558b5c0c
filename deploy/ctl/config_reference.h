// The cluster config reference as Markdown, rendered from the parser's own
// key declarations (ps::ConfigReference(), common/config.h), so the
// document cannot drift from what the parser accepts.
//   ps_ctl config-reference > deploy/CONFIG_REFERENCE.md
// //deploy/ctl:config_reference_test fails when the committed file differs.
#ifndef PS_DEPLOY_CTL_CONFIG_REFERENCE_H_
#define PS_DEPLOY_CTL_CONFIG_REFERENCE_H_

#include <string>

namespace ps::ctl {

std::string RenderConfigReference();

}  // namespace ps::ctl

#endif  // PS_DEPLOY_CTL_CONFIG_REFERENCE_H_
