// _Send and _Recv: the ends of a rendezvous. Session feeds and fetches use
// them now (whitepaper Figure 5); partitioning inserts them on cross-device
// edges later (Figure 4).
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"

namespace sluice {

REGISTER_OP("_Send")
    .Input("tensor: T")
    .Attr("T: type")
    .Attr("tensor_name: string")
    .Attr("send_device: string")
    .Attr("send_device_incarnation: int")
    .Attr("recv_device: string")
    .Attr("client_terminated: bool = false")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown);

REGISTER_OP("_Recv")
    .Output("tensor: tensor_type")
    .Attr("tensor_type: type")
    .Attr("tensor_name: string")
    .Attr("send_device: string")
    .Attr("send_device_incarnation: int")
    .Attr("recv_device: string")
    .Attr("client_terminated: bool = false")
    // What the tensor's shape is known to be: a session feed's _Recv gets
    // its placeholder's declared shape, which the session checks every fed
    // value against (engine/runtime/step_graph.h, CheckFeedValue), so that
    // passes over the step graph see the shapes that follow from it.
    .Attr("shape: shape = { unknown_rank: true }")
    .SetIsStateful()
    .SetShapeFn(shape_fns::FromShapeAttr);

}  // namespace sluice
