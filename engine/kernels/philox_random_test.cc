// Philox4x32-10 (philox_random.h): the published known-answer vectors, and
// the 16-block vector generator against the scalar one, including counters
// whose low word wraps inside a group of 16.
#include "engine/kernels/philox_random.h"

#include "gtest/gtest.h"

namespace sluice {
namespace {

// Known-answer tests from the Random123 distribution (kat_vectors, philox4x32
// with 10 rounds): counter, key -> output.
TEST(Philox, KnownAnswers) {
  EXPECT_EQ(philox::Philox4x32(philox::Key{0, 0}, philox::Block{0, 0, 0, 0}),
            (philox::Block{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox::Philox4x32(philox::Key{0xffffffffu, 0xffffffffu},
                               philox::Block{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}),
            (philox::Block{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox::Philox4x32(philox::Key{0xa4093822u, 0x299f31d0u},
                               philox::Block{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}),
            (philox::Block{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

#if defined(__AVX512F__)
TEST(Philox, SixteenBlocksMatchTheScalarGenerator) {
  const philox::Key key = philox::KeyFromSeeds(42, 9);
  for (uint64_t index0 : {uint64_t{0}, uint64_t{1000}, uint64_t{0xfffffff8u}, uint64_t{0x1fffffff0ull} + 3}) {
    for (uint32_t run : {0u, 7u}) {
      __m512i words[4];
      philox::Generate16(key, index0, run, 3, words);
      alignas(64) uint32_t lanes[4][16];
      for (int j = 0; j < 4; ++j) _mm512_store_si512(lanes[j], words[j]);
      for (int l = 0; l < 16; ++l) {
        const philox::Block want = philox::Generate(key, index0 + l, run, 3);
        for (int j = 0; j < 4; ++j) {
          EXPECT_EQ(lanes[j][l], want[j]) << "index " << index0 + l << " word " << j << " run " << run;
        }
      }
    }
  }
}

TEST(Philox, BlocksToElementsPutsWordJOfBlockBAtElement4BPlusJ) {
  __m512 v[4];
  alignas(64) float in[4][16];
  for (int j = 0; j < 4; ++j) {
    for (int b = 0; b < 16; ++b) in[j][b] = static_cast<float>(4 * b + j);
    v[j] = _mm512_load_ps(in[j]);
  }
  philox::BlocksToElements(v);
  alignas(64) float out[64];
  for (int k = 0; k < 4; ++k) _mm512_store_ps(out + 16 * k, v[k]);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(out[i], static_cast<float>(i)) << i;
}
#endif

}  // namespace
}  // namespace sluice
