// The feed/fetch rewrite and pruning of whitepaper §4.2 (Figure 5): each fed
// tensor is replaced by a _Recv node that takes its value from the step's
// rendezvous, each fetched tensor gets a _Send node that puts it there, and
// only the nodes the fetches and targets depend on are kept.
#ifndef SLUICE_ENGINE_GRAPH_SUBGRAPH_H_
#define SLUICE_ENGINE_GRAPH_SUBGRAPH_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/graph/graph.h"

namespace sluice {

struct RewriteOptions {
  // The device the step runs on and its incarnation, for rendezvous keys.
  std::string device_name;
  uint64_t device_incarnation = 1;
  // Placed graphs (several devices): each feed's _Recv and fetch's _Send goes
  // on the device of the node whose tensor it carries (its assigned_device(),
  // which must be set), instead of on `device_name`.
  bool use_assigned_devices = false;
  // The client side of feeds and fetches.
  std::string client_device = "/job:localhost/replica:0/task:0/device:CPU:0";
};

struct RewriteResult {
  // Rendezvous keys, parallel to the feeds and fetches passed in.
  std::vector<std::string> feed_keys;
  std::vector<std::string> fetch_keys;
  // The name of each feed's _Recv node, parallel to the feeds (the node is
  // gone when pruning found nothing that reads it).
  std::vector<std::string> feed_nodes;
};

// Rewrites `graph` in place. Feeds and fetches are tensor names ("node:port" or
// "node"); targets are node names. NotFound / InvalidArgument name the
// offending feed, fetch or target; a tensor both fed and fetched is fine.
absl::Status RewriteGraphForExecution(const RewriteOptions& options, const std::vector<std::string>& feeds,
                                      const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                                      Graph* graph, RewriteResult* result);

// Removes every node that no node in `roots` depends on.
void PruneForRoots(const std::vector<Node*>& roots, Graph* graph);

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_SUBGRAPH_H_
