# PgBouncer (Debian's package) in transaction mode in front of the service's PostgreSQL.
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends pgbouncer postgresql-client \
    && rm -rf /var/lib/apt/lists/*
COPY docker/service-pgbouncer/pgbouncer.ini docker/service-pgbouncer/userlist.txt /etc/pgbouncer/
USER postgres
EXPOSE 6432
CMD ["pgbouncer", "/etc/pgbouncer/pgbouncer.ini"]
