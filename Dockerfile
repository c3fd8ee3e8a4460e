# The image the Helm chart runs: /gateway (entrypoint) and /admin.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags=-s -o /out/ ./cmd/gateway ./cmd/admin

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/gateway /out/admin /
USER 65532:65532
ENTRYPOINT ["/gateway"]
