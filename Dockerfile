# The manager image, for those who build images elsewhere: docker build -t rollgate .
# The Go release the Makefile builds with (GO_VERSION).
FROM golang:1.27.3 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY renovate/ renovate/
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /rollgate ./cmd/rollgate

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /rollgate /rollgate
USER 65532:65532
ENTRYPOINT ["/rollgate"]
