#include "common/signal_names.h"

#include <csignal>

#include <gtest/gtest.h>

namespace podvisor {
namespace {

TEST(SignalNames, KubernetesNamesNeedTheSigPrefix) {
  EXPECT_EQ(ParseKubernetesSignalName("SIGTERM"), SIGTERM);
  EXPECT_EQ(ParseKubernetesSignalName("SIGKILL"), SIGKILL);
  EXPECT_EQ(ParseKubernetesSignalName("SIGUSR1"), SIGUSR1);
  EXPECT_FALSE(ParseKubernetesSignalName("TERM"));
  EXPECT_FALSE(ParseKubernetesSignalName("sigterm"));
  EXPECT_FALSE(ParseKubernetesSignalName("15"));
  EXPECT_FALSE(ParseKubernetesSignalName("SIGFOO"));
}

TEST(SignalNames, RealtimeOffsetsAreBounded) {
  EXPECT_EQ(ParseKubernetesSignalName("SIGRTMIN"), SIGRTMIN);
  EXPECT_EQ(ParseKubernetesSignalName("SIGRTMIN+3"), SIGRTMIN + 3);
  EXPECT_EQ(ParseKubernetesSignalName("SIGRTMIN+15"), SIGRTMIN + 15);
  EXPECT_EQ(ParseKubernetesSignalName("SIGRTMAX-14"), SIGRTMAX - 14);
  EXPECT_EQ(ParseKubernetesSignalName("SIGRTMAX"), SIGRTMAX);
  EXPECT_FALSE(ParseKubernetesSignalName("SIGRTMIN+16"));
  EXPECT_FALSE(ParseKubernetesSignalName("SIGRTMIN+0"));
  EXPECT_FALSE(ParseKubernetesSignalName("SIGRTMIN+01"));
  EXPECT_FALSE(ParseKubernetesSignalName("SIGRTMAX+1"));
  EXPECT_FALSE(ParseKubernetesSignalName("SIGRTMIN-1"));
}

TEST(SignalNames, LenientFormsForImagesAndTheCli) {
  EXPECT_EQ(ParseSignal("SIGTERM"), SIGTERM);
  EXPECT_EQ(ParseSignal("TERM"), SIGTERM);
  EXPECT_EQ(ParseSignal("term"), SIGTERM);
  EXPECT_EQ(ParseSignal("9"), SIGKILL);
  EXPECT_FALSE(ParseSignal("0"));
  EXPECT_FALSE(ParseSignal("999"));
  EXPECT_FALSE(ParseSignal(""));
  EXPECT_FALSE(ParseSignal("9x"));
}

TEST(SignalNames, NamesRoundTrip) {
  EXPECT_EQ(SignalName(SIGTERM), "SIGTERM");
  EXPECT_EQ(SignalName(SIGCHLD), "SIGCHLD");
  EXPECT_EQ(SignalName(SIGIO), "SIGIO");
  EXPECT_EQ(SignalName(SIGRTMIN + 2), "SIGRTMIN+2");
  EXPECT_EQ(SignalName(SIGRTMAX - 1), "SIGRTMAX-1");
  for (int s = 1; s <= SIGRTMAX; ++s) {
    if (s > SIGSYS && s < SIGRTMIN) continue;  // glibc-reserved numbers
    EXPECT_EQ(ParseSignal(SignalName(s)), s) << s;
  }
}

}  // namespace
}  // namespace podvisor
