# The container image for the Kubernetes DaemonSet (config/kubernetes/daemonset.yaml), for
# builders that can pull base images. `npm run build:image` makes the same image from local
# files with Podman; both have this layout:
#   /usr/local/bin/se-bridge             the single executable (npm run build:binary)
#   glibc, libstdc++, libgcc_s           from Debian's packages
#   /etc/ssl/certs/ca-certificates.crt   Mozilla's CA bundle
#   /etc/passwd, /etc/group              root and se-bridge (10001:10001)
#   /var/lib/se-bridge                   the state directory, owned by the bridge's user
#   /tmp                                 1777
FROM node:24-bookworm AS build
WORKDIR /src
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
RUN npm ci --no-audit --no-fund
COPY src ./src
COPY bin ./bin
COPY scripts ./scripts
COPY config ./config
COPY examples ./examples
COPY README.md LICENSE ./
RUN npm run build:binary

FROM debian:bookworm-slim AS rootfs
RUN apt-get update && mkdir -p /debs /rootfs && cd /debs \
 && apt-get download libc6 libgcc-s1 libstdc++6 ca-certificates \
 && for deb in /debs/*.deb; do dpkg-deb -x "$deb" /rootfs; done \
 && cd /rootfs && rm -rf usr/share usr/sbin usr/bin sbin etc/ca-certificates usr/lib/x86_64-linux-gnu/gconv usr/libexec etc/ld.so.conf.d \
 && mkdir -p /certs etc/ssl/certs tmp var/lib/se-bridge usr/local/bin \
 && dpkg-deb -x /debs/ca-certificates_*.deb /certs \
 && cat /certs/usr/share/ca-certificates/mozilla/*.crt > etc/ssl/certs/ca-certificates.crt \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nse-bridge:x:10001:10001:se-bridge:/var/lib/se-bridge:/sbin/nologin\n' > etc/passwd \
 && printf 'root:x:0:\nse-bridge:x:10001:\n' > etc/group \
 && printf 'passwd: files\ngroup: files\nhosts: files dns\n' > etc/nsswitch.conf \
 && chmod 1777 tmp && chown 10001:10001 var/lib/se-bridge && chmod 0750 var/lib/se-bridge
COPY --from=build /src/build/se-bridge-linux-x64 /rootfs/usr/local/bin/se-bridge

FROM scratch
COPY --from=rootfs /rootfs/ /
USER 10001:10001
WORKDIR /var/lib/se-bridge
ENV SE_BRIDGE_CONFIG=/etc/se-bridge/bridge.yaml
# glibc's allocator gives freed memory back (the systemd unit's setting; docs/performance.md)
ENV GLIBC_TUNABLES=glibc.malloc.mmap_threshold=32768:glibc.malloc.trim_threshold=65536
ENTRYPOINT ["/usr/local/bin/se-bridge"]
CMD ["run"]
