# partd container image: `docker build -t partd .` then
#   docker run -p 8080:8080 -v partd-data:/var/lib/partd partd
# Configuration through PARTD_* environment variables (every `partd serve`
# flag has one), e.g. -e PARTD_WORKERS=4 -e PARTD_TOKEN_FILE=/run/secrets/partd.
#
# The build stage installs exactly the -dev packages behind the Makefile's
# pkg-config line and runs the Makefile's own default target, so the image
# is built the way `make` builds on a workstation (tests/python/test_docker.py
# keeps the two in step).

FROM debian:bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
        gcc libc6-dev make pkg-config \
        libjansson-dev libyajl-dev libmicrohttpd-dev libuv1-dev libsqlite3-dev libssl-dev libsodium-dev \
        libsystemd-dev libpq-dev coinor-libcbc-dev zlib1g-dev libzstd-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Makefile ./
COPY lib/ lib/
COPY daemon/ daemon/
# The source revision for `partd version` (the context has no .git).
ARG PARTD_BUILD=unknown
RUN make GIT_REV="$PARTD_BUILD"

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
        libjansson4 libyajl2 libmicrohttpd12 libuv1 libsqlite3-0 libpq5 libssl3 libsodium23 libsystemd0 \
        coinor-libcbc3 zlib1g libzstd1 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --home-dir /var/lib/partd \
        --shell /usr/sbin/nologin partd \
 && install -d -o partd -g partd -m 0700 /var/lib/partd
COPY --from=build /src/build/partd /usr/local/bin/partd
USER partd:partd
WORKDIR /var/lib/partd
EXPOSE 8080
VOLUME /var/lib/partd
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["partd", "healthcheck"]
ENTRYPOINT ["partd"]
CMD ["serve", "--listen", "0.0.0.0:8080", "--data-dir", "/var/lib/partd"]
