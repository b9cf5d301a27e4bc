#!/bin/sh
# setup.sh: installs the Debian/Ubuntu packages the kit needs, if any are missing.
# As root it runs apt-get itself; otherwise it prints the one sudo command to run.
#   ./setup.sh              Open MPI, the kit's default MPI
#   MPI=mpich ./setup.sh    MPICH besides (make ... MPI=mpich); the default stays Open MPI
#   ./setup.sh --list       print the packages and stop (the dev container and
#                           the arm64 root of `make check-arm64` install the same list)
set -eu
PACKAGES="g++ make cmake ninja-build openmpi-bin libopenmpi-dev libeigen3-dev libgtest-dev zlib1g-dev nlohmann-json3-dev
python3 python3-pytest python3-pytest-xdist dataset-fashion-mnist gnuplot-nox util-linux iproute2 hwloc-nox"
case "${MPI:-${KIT_MPI:-openmpi}}" in
  openmpi) ;;
  mpich) PACKAGES="$PACKAGES mpich libmpich-dev" ;;
  *) echo "setup.sh: MPI must be openmpi or mpich, got '${MPI:-${KIT_MPI:-}}'"; exit 2 ;;
esac

if [ "${1:-}" = --list ]; then
  echo $PACKAGES
  exit 0
fi
# A copy that holds the kit's self-test (staff/) also needs sim_c++, which
# grader/grade --similar runs and make check tests, and strace, with which
# make check counts the MPI side's direct copies; the images and roots
# built from the list above never run either.
if [ -d "$(dirname "$0")/staff" ]; then
  PACKAGES="$PACKAGES similarity-tester strace"
fi

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "setup.sh: this is not a Debian/Ubuntu system. Install by hand: a C++17 compiler, CMake 3.18+ (Ninja too, if you can),"
  echo "OpenMPI, Eigen 3, GoogleTest, zlib, nlohmann-json, Python 3 with pytest, and the Fashion-MNIST IDX files"
  echo "(put them in data/ of the kit: the programs look in --data DIR, then \$DTRAIN_DATA, then data/, then"
  echo "/usr/share/datasets/fashion-mnist)."
  exit 1
fi

missing=""
for p in $PACKAGES; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done

if [ -z "$missing" ]; then
  echo "setup.sh: all $(echo $PACKAGES | wc -w) packages the kit needs are installed."
  exit 0
fi

if [ "$(id -u)" = 0 ]; then
  echo "setup.sh: installing:$missing"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
  echo "setup.sh: done."
else
  echo "setup.sh: missing packages:$missing"
  echo "Install them with:"
  echo "  sudo apt-get install -y$missing"
  exit 1
fi
