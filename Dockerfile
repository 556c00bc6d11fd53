# crm-sms-gateway image: build with the dev toolchain, run with production dependencies only, as a non-root user.
#   docker build -t crm-sms-gateway .
#   docker run -p 8080:8080 -v gateway-data:/app/data crm-sms-gateway            # serve on the embedded defaults
#   docker run -v gateway-data:/app/data crm-sms-gateway migrate --config config.yaml
# Node 24 LTS, the major CI runs the tests on (.ci/run). Both stages use the same base image.
#   deploy/compose.yaml and deploy/kubernetes/ run this image (docs/deployment.md).
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the package's own `prepare` (tsc) needs sources that are not copied yet. No dependency needs an
# install step: better-sqlite3 13 ships its addon prebuilt for linux x64 and arm64 (glibc and musl), so no compiler.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY providers ./providers
RUN npx tsc -p tsconfig.json \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
# config.yaml reads server.environment from it: production refuses development keys and unverifiable receipts
# (exit 78 naming the key; docs/security.md). Set GATEWAY_ENV=development to try the image on its defaults.
ENV GATEWAY_ENV=production
# V8 heap (docs/operations.md "Memory"): a ceiling so V8 collects before the container's OOM killer acts; fit it to
# the memory limit (about 3/4 of a 512 MiB limit here). Any ceiling under 2 GiB also lets the old generation grow to
# only about twice what a full collection kept, where V8's default on a large host allowed four times (bench/README.md
# "Memory, third round"): the bin's first line (src/bin.ts) passes 1536 for that alone. The young generation is
# capped at 2 × 8 MiB: Node 24 sizes it from the machine's memory, up to 2 × 64 MiB, and under the peer benchmark it
# filled all of it (bench/README.md "Memory"); 4 MiB promoted more and raised the peak (measured on Node 20). The bin
# passes the same cap when it is run as a command; here node runs it, so NODE_OPTIONS counts. Against the bin's 1536,
# 384 measured 12–17 MiB lower peaks at the same CPU per single message and 0–5% more per batch message (six
# alternated pairs each, bench/README.md "Memory, third round"); the bin keeps 1536 because it runs where no
# container limit says how much memory there is.
ENV NODE_OPTIONS="--max-old-space-size=384 --max-semi-space-size=8"
# glibc's malloc gives each thread that allocates an arena of its own and keeps what each once held; two arenas took
# 15–25 MiB off the benchmark peaks at the same submit rate (bench/README.md "Memory"; the bin's first line sets it too).
ENV MALLOC_ARENA_MAX=2
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY config.yaml ./
# The SQLite ledger (config.yaml: sqlite:./data/gateway.db) lives on a volume the unprivileged user owns.
RUN mkdir -p /app/data && chown node:node /app/data
VOLUME ["/app/data"]
USER node
EXPOSE 8080
# Slim images have no curl; Node's own fetch checks the port config.yaml listens on.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# serve handles SIGTERM itself (closes the server and the ledger, exits 0), so node can run as PID 1.
ENTRYPOINT ["node", "dist/src/cli.js"]
CMD ["serve", "--config", "config.yaml"]
