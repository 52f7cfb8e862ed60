// Recv scheduling (whitepaper §5.2): a _Recv has no inputs, so an executor
// would start it at once and the received tensor would then sit in memory
// until its consumer runs, possibly long after. Here each Recv a partitioner
// made gets one control input from a node of its own device that finishes
// about when the Recv should start as late as possible (ALAP).
//
// The schedule is computed over all partitions at once, joined by their
// Send -> Recv links, with unit cost per node:
//   - ALAP: latest(n) = min over successors s of latest(s), minus 1, with
//     sinks ending at the ASAP makespan;
//   - S: each linked Recv at max(its ALAP start, its Send's finish); every
//     other node at its earliest start given those Recvs.
// S grows by at least 1 along every edge, so a control edge X -> r added only
// when finish(X) = S(X) + 1 <= S(r) also goes uphill, and no cycle can form,
// not even one that leaves the device and comes back through other Sends and
// Recvs. X is the node of r's device with the largest finish <= S(r) among:
// root-frame nodes that are not _Recv or Enter nodes (an Enter's out-edges
// lead into its loop), not a descendant of an Exit (a
// path through a loop could close a cycle through its back edge) and not a
// descendant of a Switch (a dead X would make r, and r's consumers, dead).
// Recvs inside loop frames, and Recvs with inputs, are left alone; so is a
// Recv no node qualifies for.
//
// Thread safety: mutates the given graphs; call from one thread.
#ifndef SLUICE_ENGINE_GRAPH_RECV_SCHEDULING_H_
#define SLUICE_ENGINE_GRAPH_RECV_SCHEDULING_H_

#include <vector>

#include "absl/status/statusor.h"
#include "engine/graph/graph.h"

namespace sluice {

// A Send/Recv pair: the _Send's node id in partitions[send_partition] and the
// _Recv's node id in partitions[recv_partition].
struct SendRecvLink {
  int send_partition = -1;
  int send_node = -1;
  int recv_partition = -1;
  int recv_node = -1;
};

// Adds at most one control edge into each linked Recv (see above) and returns
// how many it added. `partitions` may hold nullptr entries. InvalidArgument
// when a link names a missing node or the linked graphs have a cycle (which a
// partition of an acyclic graph never has).
absl::StatusOr<int> ScheduleRecvsAlap(const std::vector<Graph*>& partitions, const std::vector<SendRecvLink>& links);

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_RECV_SCHEDULING_H_
