# The image the Helm chart runs: /gateway (entrypoint) and /admin.
#   docker build --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg REVISION=$(git rev-parse HEAD) -t portcullis .
# Bases are pinned by digest, the tag kept beside it for readers: a tag
# says what an image is, the digest decides which bytes are built. To move
# a base, resolve the tag's current digest (`crane digest golang:1.26`,
# `crane digest gcr.io/distroless/static-debian12:nonroot`) and change it
# here in a commit of its own.
FROM golang:1.26@sha256:595c7847cff97c9a9e76f015083c481d26078f961c9c8dca3923132f51fe12f1 AS build
ARG VERSION=dev
ARG REVISION=
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# .dockerignore keeps .git out of the context, so the revision comes from
# the build argument, not from the go command's VCS stamping.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags="-s -X main.version=${VERSION} -X main.revision=${REVISION}" -o /out/ ./cmd/gateway ./cmd/admin

FROM gcr.io/distroless/static-debian12:nonroot@sha256:d093aa3e30dbadd3efe1310db061a14da60299baff8450a17fe0ccc514a16639
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="portcullis" \
      org.opencontainers.image.description="Multi-tenant admission-policy gateway for Kubernetes" \
      org.opencontainers.image.source="https://github.com/portcullis-dev/portcullis" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=build /out/gateway /out/admin /
USER 65532:65532
ENTRYPOINT ["/gateway"]
