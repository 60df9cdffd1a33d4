# normd image: built on the CUDA devel image, run on the matching CUDA runtime image as a non-root user.
#
#   docker build -t normd:latest .                                  # CUDA for sm_90a, sm_100, sm_80, sm_89
#   docker build --build-arg CUDA_ARCHITECTURES=90a -t normd:h200 .
#   docker run --gpus all -p 50051:50051 -p 9464:9464 normd:latest
#
# Flags come from NORMD_* environment variables (NORMD_BACKEND=cpu, NORMD_DRAIN_TIMEOUT=20s, ...; see
# `normd --help`); arguments after the image name are passed to normd too. The image build itself is
# not run in CI (no Docker engine there): see README.md, "Deploying".
ARG CUDA_VERSION=13.0.1

FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu24.04 AS build
ARG CUDA_ARCHITECTURES="90a;100;80;89"
WORKDIR /src
# The packages a developer builds with (scripts/install-deps.sh --build-only: not the test tools), in
# a layer of their own so that a source change does not reinstall them.
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN bash scripts/install-deps.sh --build-only && rm -rf /var/lib/apt/lists/*
COPY . .
RUN cmake --preset release -DNORMD_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES}" \
        -DNORMD_BUILD_TESTS=OFF -DNORMD_BUILD_BENCH=OFF \
    && cmake --build --preset release --target normd normctl -j "$(nproc)" \
    && install -D -m 0755 build/release/server/normd /out/usr/local/bin/normd \
    && install -D -m 0755 build/release/client/normctl /out/usr/local/bin/normctl
# The runtime stage installs exactly the packages that own the shared libraries the binaries load
# (libgrpc++, libprotobuf, absl, prometheus-cpp, ...), found with ldd and dpkg -S, so the list cannot
# drift from what the build linked. CUDA's own libraries are already in the runtime image, and
# libcuda comes from the host driver through the NVIDIA Container Toolkit.
RUN for lib in $(ldd /out/usr/local/bin/* | awk '$3 ~ /^\// {print $3}' | sort -u); do \
        dpkg -S "*/$(basename "$lib")" 2>/dev/null | cut -d: -f1 | head -n 1; \
    done | grep -v -E '^(cuda-|libcuda|libnv)' | sort -u > /out/runtime-packages.txt \
    && cat /out/runtime-packages.txt

FROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu24.04 AS runtime
COPY --from=build /out/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update -q \
    && DEBIAN_FRONTEND=noninteractive xargs -a /tmp/runtime-packages.txt \
        apt-get install -y -q --no-install-recommends \
    && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt \
    && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin normd
COPY --from=build /out/usr/local/bin/ /usr/local/bin/
USER 10001:10001
# Inside a container normd must listen on every interface; outside, its defaults stay on loopback.
ENV NORMD_LISTEN=0.0.0.0:50051 \
    NORMD_METRICS_LISTEN=0.0.0.0:9464
EXPOSE 50051 9464
# SIGTERM drains (new calls get UNAVAILABLE, accepted ones finish, exit 0 within --drain-timeout):
# give `docker stop -t` or stop_grace_period more than NORMD_DRAIN_TIMEOUT (default 30s).
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
    CMD ["/usr/local/bin/normctl", "--target=127.0.0.1:50051", "health"]
ENTRYPOINT ["/usr/local/bin/normd"]
