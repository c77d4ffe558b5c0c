// The default cluster config of ps_launch: the text of
// deploy/examples/fashion_mnist.yaml, embedded at build time by a genrule so
// the binary needs no files.
#ifndef PS_DEPLOY_LAUNCHER_DEFAULT_CONFIG_H_
#define PS_DEPLOY_LAUNCHER_DEFAULT_CONFIG_H_

namespace ps::launcher {

extern const char kDefaultConfigYaml[];
extern const char kDefaultConfigName[];

}  // namespace ps::launcher

#endif  // PS_DEPLOY_LAUNCHER_DEFAULT_CONFIG_H_
