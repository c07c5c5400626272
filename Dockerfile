# Container image for the Kubernetes DaemonSet (config/kubernetes/daemonset.yaml).
FROM node:24-slim
WORKDIR /opt/se-bridge
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY src ./src
COPY config ./config
USER 10001:10001
ENTRYPOINT ["node", "src/cli.ts"]
CMD ["run"]
