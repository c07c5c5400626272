# Container image for the Kubernetes DaemonSet (config/kubernetes/daemonset.yaml), built from
# the same npm package that test/e2e/package.test.ts installs and runs.
FROM node:24-slim AS pack
WORKDIR /src
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
RUN npm ci --no-audit --no-fund
COPY src ./src
COPY bin ./bin
COPY config ./config
COPY examples ./examples
COPY README.md LICENSE ./
RUN npm pack --pack-destination /tmp && mv /tmp/scheduled-events-bridge-*.tgz /tmp/se-bridge.tgz

FROM node:24-slim
RUN --mount=type=bind,from=pack,source=/tmp/se-bridge.tgz,target=/tmp/se-bridge.tgz \
    npm install --global --omit=dev --no-audit --no-fund /tmp/se-bridge.tgz && npm cache clean --force
# state on a volume (/var/lib/se-bridge); nothing else is written, so the root filesystem can be read-only
USER 10001:10001
ENV SE_BRIDGE_CONFIG=/etc/se-bridge/bridge.yaml
ENTRYPOINT ["se-bridge"]
CMD ["run"]
