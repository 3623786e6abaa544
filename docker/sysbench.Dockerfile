# sysbench (Debian's package) driving the MariaDB container.
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends sysbench \
    && rm -rf /var/lib/apt/lists/*
COPY docker/sysbench-entrypoint.sh /usr/local/bin/
ENTRYPOINT ["sysbench-entrypoint.sh"]
