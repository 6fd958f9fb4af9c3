#pragma once
/* The versions and well-known numbers cubelet reports. CUBELET_VERSION,
 * cubelet's own version, comes from the build (agent/CMakeLists.txt). */

/* The version the agent reports as nodeInfo.kubeletVersion: the Kubernetes
 * API level cubelet implements, plain semver so version-skew checks of
 * other tools accept it (cubelet's own version is in
 * containerRuntimeVersion, cubelet://VERSION). */
#define AG_KUBELET_VERSION "v1.32.0"
#define AG_KUBELET_PORT    10250
