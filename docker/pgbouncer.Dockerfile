# PgBouncer (Debian's package) in front of the "pg-app" PostgreSQL; psql for the healthcheck.
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends pgbouncer postgresql-client \
    && rm -rf /var/lib/apt/lists/*
COPY docker/pgbouncer/pgbouncer.ini docker/pgbouncer/userlist.txt /etc/pgbouncer/
USER postgres
EXPOSE 6432
CMD ["pgbouncer", "/etc/pgbouncer/pgbouncer.ini"]
