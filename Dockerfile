# Build: static binaries, the same flags as `make build`: the manager, and
# mcp-bridge, which the init container of stdio workloads copies into pods
# of any image. Base images are pinned by digest so a rebuild uses the same
# bytes; refresh the digests deliberately (for example with
# `crane digest golang:1.26`).
FROM golang:1.26@sha256:595c7847cff97c9a9e76f015083c481d26078f961c9c8dca3923132f51fe12f1 AS builder
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=dev
WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" -o manager ./cmd/manager && \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w" -o mcp-bridge ./cmd/mcp-bridge

# Run: distroless static, non-root, nothing but the binaries. The bridge's
# path is fixed: the operator's init container runs
# /usr/local/bin/mcp-bridge --install (controller.BridgeInImage).
# `make image` builds the same image without a Docker engine (hack/image:
# FROM scratch plus the users, CA bundle and /tmp this base gives a static
# Go program); hack/image/dockerfile_test.go compares the two, and
# docs/development.md ("Images") lists what this base holds that the
# scratch image leaves out and why the binaries do not need it. Change one,
# change the other.
FROM gcr.io/distroless/static:nonroot@sha256:f7f8f729987ad0fdf6b05eeeae94b26e6a0f613bdf46feea7fc40f7bd72953e6
ARG VERSION=dev
ARG REVISION=""
LABEL org.opencontainers.image.title="mcp-operator" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="https://github.com/toolmesh/mcp-operator" \
      org.opencontainers.image.licenses="Apache-2.0"
WORKDIR /
COPY --from=builder /workspace/manager .
COPY --from=builder /workspace/mcp-bridge /usr/local/bin/mcp-bridge
USER 65532:65532
ENTRYPOINT ["/manager"]
