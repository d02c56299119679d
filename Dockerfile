# syntax=docker/dockerfile:1
# tenantry's image: compiled once with the dev toolchain, run from distroless Node.js as non-root.

FROM node:24-trixie-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# No install scripts: the image has Node.js 24 already (the node package would fetch it again).
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build.mjs ./scripts/
COPY src ./src
# The commit the image is built from (no .git in the build context's copy): tenantry version names it.
ARG TENANTRY_COMMIT
RUN npm run build

FROM node:24-trixie-slim AS runtime-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts

FROM gcr.io/distroless/nodejs24-debian13:nonroot
WORKDIR /app
ENV NODE_ENV=production
COPY --from=runtime-deps /app/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json ./
# The distroless "nonroot" user, numeric so that runAsNonRoot can verify it.
USER 65532:65532
ENTRYPOINT ["/nodejs/bin/node", "/app/dist/cli/main.js"]
CMD ["run", "--in-cluster"]
