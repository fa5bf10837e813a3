//===- MmaAtomTest.cpp - mma.sync fragment layouts ------------------------===//

#include "../../lib/Conversion/AttnToGPU/Parts/MmaAtom.h"

#include <gtest/gtest.h>

#include <map>
#include <utility>
#include <vector>

using namespace flashir::conversion::parts;

namespace {

// The PTX ISA's fragment formulas ("Matrix Fragments for mma.m16n8k16 /
// mma.m16n8k8 with floating point type"), transcribed as written there:
// groupID = laneid >> 2, threadID_in_group = laneid % 4.
FragmentCoord ptxM16n8k16(MmaOperand operand, int64_t lane, int64_t i) {
  int64_t groupID = lane >> 2, threadID_in_group = lane % 4;
  switch (operand) {
  case MmaOperand::A: {
    int64_t row = (i < 2 || (4 <= i && i < 6)) ? groupID : groupID + 8;
    int64_t col = i < 4 ? threadID_in_group * 2 + (i & 0x1)
                        : threadID_in_group * 2 + (i & 0x1) + 8;
    return {row, col};
  }
  case MmaOperand::B: {
    int64_t row = i < 2 ? threadID_in_group * 2 + (i & 0x1)
                        : threadID_in_group * 2 + (i & 0x1) + 8;
    return {row, groupID};
  }
  case MmaOperand::C:
    return {i < 2 ? groupID : groupID + 8, threadID_in_group * 2 + (i & 0x1)};
  }
  return {};
}

FragmentCoord ptxM16n8k8(MmaOperand operand, int64_t lane, int64_t i) {
  int64_t groupID = lane >> 2, threadID_in_group = lane % 4;
  switch (operand) {
  case MmaOperand::A:
    return {i < 2 ? groupID : groupID + 8, threadID_in_group * 2 + (i & 0x1)};
  case MmaOperand::B:
    return {threadID_in_group * 2 + i, groupID};
  case MmaOperand::C:
    return {i < 2 ? groupID : groupID + 8, threadID_in_group * 2 + (i & 0x1)};
  }
  return {};
}

// Every lane's every element of `operand` where `ptx` says.
void expectPtxLayout(const FragmentLayout &l, MmaOperand operand,
                     FragmentCoord (*ptx)(MmaOperand, int64_t, int64_t),
                     const char *what) {
  for (int64_t lane = 0; lane < FragmentLayout::kLanes; ++lane)
    for (int64_t i = 0; i < l.elements(); ++i)
      EXPECT_EQ(l.coord(lane, i), ptx(operand, lane, i))
          << what << " operand " << int(operand) << " lane " << lane
          << " element " << i;
}

constexpr MmaOperand kOperands[] = {MmaOperand::A, MmaOperand::B,
                                    MmaOperand::C};

// Every (row, col) of the operand is held by exactly one (lane, element),
// and owner() finds it.
void expectPartition(const FragmentLayout &l, const char *what) {
  EXPECT_EQ(l.elements() * FragmentLayout::kLanes, l.rows * l.cols) << what;
  std::map<std::pair<int64_t, int64_t>, int> held;
  for (int64_t lane = 0; lane < FragmentLayout::kLanes; ++lane)
    for (int64_t i = 0; i < l.elements(); ++i) {
      FragmentCoord c = l.coord(lane, i);
      ASSERT_GE(c.row, 0) << what;
      ASSERT_LT(c.row, l.rows) << what;
      ASSERT_GE(c.col, 0) << what;
      ASSERT_LT(c.col, l.cols) << what;
      ++held[{c.row, c.col}];
      auto owner = l.owner(c.row, c.col);
      ASSERT_TRUE(owner.has_value()) << what;
      EXPECT_EQ(*owner, std::pair(lane, i)) << what;
    }
  EXPECT_EQ(static_cast<int64_t>(held.size()), l.rows * l.cols) << what;
  for (auto [coord, count] : held)
    EXPECT_EQ(count, 1) << what << " (" << coord.first << ", " << coord.second
                        << ")";
}

TEST(MmaAtom, M16n8k16MatchesThePtxIsa) {
  for (MmaType type : {MmaType::f16, MmaType::bf16}) {
    MmaAtom atom = MmaAtom::m16n8k16(type);
    EXPECT_EQ(atom.instructions(), 1);
    for (MmaOperand operand : kOperands) {
      FragmentLayout l = atom.layout(operand);
      expectPtxLayout(l, operand, ptxM16n8k16, "m16n8k16");
      expectPartition(l, "m16n8k16");
    }
    // Registers: A four .f16x2 / .b32, B two, C four f32.
    EXPECT_EQ(atom.layout(MmaOperand::A).registers(), 4);
    EXPECT_EQ(atom.layout(MmaOperand::B).registers(), 2);
    EXPECT_EQ(atom.layout(MmaOperand::C).registers(), 4);
  }
}

TEST(MmaAtom, M16n8k8PairsMatchThePtxIsa) {
  MmaAtom atom = MmaAtom::m16n8k8Pair();
  EXPECT_EQ(atom.instructions(), 2);
  for (MmaOperand operand : kOperands) {
    FragmentLayout one = atom.instructionLayout(operand);
    expectPtxLayout(one, operand, ptxM16n8k8, "m16n8k8");
    expectPartition(one, "m16n8k8");
    expectPartition(atom.layout(operand), "m16n8k8 pair");
  }
  // Instruction j covers k columns 8j..8j+7 of the pair's m16n8k16 layout:
  // its A registers 2j, 2j + 1 and B register j, element for element.
  for (int64_t j = 0; j < 2; ++j)
    for (MmaOperand operand : {MmaOperand::A, MmaOperand::B}) {
      FragmentLayout one = atom.instructionLayout(operand);
      FragmentLayout whole = atom.layout(operand);
      auto [first, count] = atom.instructionRegisters(operand, j);
      EXPECT_EQ(count, one.registers());
      for (int64_t lane = 0; lane < FragmentLayout::kLanes; ++lane)
        for (int64_t i = 0; i < one.elements(); ++i) {
          FragmentCoord c = one.coord(lane, i);
          (operand == MmaOperand::A ? c.col : c.row) += 8 * j;
          EXPECT_EQ(whole.coord(lane, first * whole.perRegister + i), c)
              << "instruction " << j << " lane " << lane;
        }
    }
  auto [cFirst, cCount] = atom.instructionRegisters(MmaOperand::C, 1);
  EXPECT_EQ(cFirst, 0);
  EXPECT_EQ(cCount, 4);
}

// The constant offsets kernels take from the layouts.
TEST(MmaAtom, ElementsByOffset) {
  FragmentLayout a = MmaAtom::m16n8k16(MmaType::bf16).layout(MmaOperand::A);
  FragmentLayout c = MmaAtom::m16n8k16(MmaType::bf16).layout(MmaOperand::C);
  // A register r: row half r % 2, k half r / 2.
  for (int64_t r = 0; r < 4; ++r)
    EXPECT_EQ(a.registerAt(8 * (r % 2), 8 * (r / 2)), r);
  // C element e: row half e / 2, column e % 2; the accumulators of two
  // n-tiles are the A fragment of one k-step (FlashAttention-2's P).
  for (int64_t e = 0; e < 4; ++e)
    EXPECT_EQ(c.elementAt(8 * (e / 2), e % 2), e);
  for (int64_t half = 0; half < 2; ++half)
    for (int64_t nt = 0; nt < 2; ++nt)
      for (int64_t e = 0; e < 2; ++e) {
        FragmentCoord acc = c.offsets[size_t(c.elementAt(8 * half, e))];
        int64_t i = a.elementAt(acc.row, acc.col + 8 * nt);
        EXPECT_EQ(i / a.perRegister, half + 2 * nt);
        EXPECT_EQ(i % a.perRegister, e);
      }
  // The 8-row halves the lanes' rows fall in.
  EXPECT_EQ(c.rowOffsets(), (std::vector<int64_t>{0, 8}));
  EXPECT_EQ(a.rowOffsets(), (std::vector<int64_t>{0, 8}));
  EXPECT_EQ(a.elementAt(1, 0), -1);
  EXPECT_FALSE(a.owner(16, 0).has_value());
}

} // namespace
