# The voice runtime's container (lib/voice.ts builds it with CDK: `cdk deploy` needs Docker, `cdk synth` does not).
# Stage 1 bundles voice/main.ts and the shared/ code it imports into one file with esbuild, as the
# functions are bundled; stage 2 is that file on node:22-slim, run as the unprivileged `node` user.
FROM node:22-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY client/package.json client/package.json
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY shared shared
COPY voice voice
# ws's optional native helpers are not installed; the SDK resolves its ES-module entry points (TOOLING.md).
RUN npx esbuild voice/main.ts --bundle --platform=node --target=node22 --format=cjs \
      --main-fields=module,main --external:bufferutil --external:utf-8-validate \
      --minify --sourcemap --outfile=dist/main.js

FROM node:22-slim
ENV NODE_ENV=production PORT=8080 AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED=true
WORKDIR /app
COPY --from=build /app/dist ./
USER node
EXPOSE 8080
# SIGTERM starts the drain (ECS then waits up to stopTimeout, 120 s at most on Fargate).
CMD ["node", "--enable-source-maps", "main.js"]
