# The image the Helm chart runs: /gateway (entrypoint) and /admin.
#   docker build --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg REVISION=$(git rev-parse HEAD) -t portcullis .
FROM golang:1.26 AS build
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

FROM gcr.io/distroless/static-debian12:nonroot
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
