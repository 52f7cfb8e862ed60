// The oneDNN kernels of Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter
// and _FusedConv2D (float32, CPU, Label("onednn")); see conv_ops.cc. This
// header only exposes the benchmark switch.
#ifndef SLUICE_ENGINE_KERNELS_ONEDNN_CONV_OPS_H_
#define SLUICE_ENGINE_KERNELS_ONEDNN_CONV_OPS_H_

namespace sluice {
namespace onednn {

// By default the kernels hand the shapes where our kernels measured faster
// (ConvPrefersOurs in conv_ops.cc) to ours; false makes them use oneDNN for
// every shape it takes (benchmarks that compare the two). Process-wide; set
// it before kernels run.
void SetConvPreferOursWhereFaster(bool prefer);

}  // namespace onednn
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_ONEDNN_CONV_OPS_H_
