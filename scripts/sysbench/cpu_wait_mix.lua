-- pooltune: a request that mixes server CPU work with server-side waits.
--
-- Each event sends `point_selects` primary-key selects, one `SELECT BENCHMARK(cpu_rounds,
-- MD5(...))` (pure server CPU, a few milliseconds) and one `SELECT SLEEP(sleep_ms / 1000)`
-- (a wait off the CPU inside the server, like a slow disk or a remote call). With
-- CPU time S and wait W per request, the thread-pool heuristic predicts an optimal pool
-- of about cores * (1 + W/S); this is the kind of load where the pool size can matter on
-- a 2-core host. With `--sleep-ms=0` the request is CPU work only. Uses the tables `sbtest1..N` made by `sysbench oltp_read_only prepare`.
--
-- Usage: sysbench scripts/sysbench/cpu_wait_mix.lua --mysql-...=... --tables=4 \
--          --table-size=10000 --threads=16 --time=60 run

sysbench.cmdline.options = {
   tables = {"Number of sbtest tables", 1},
   table_size = {"Rows per table", 10000},
   point_selects = {"Primary-key selects per event", 4},
   cpu_rounds = {"BENCHMARK() rounds of MD5 per event (server CPU work)", 20000},
   sleep_ms = {"Server-side wait per event (SELECT SLEEP), milliseconds", 5},
}

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
end

function thread_done()
   con:disconnect()
end

function event()
   local tables = sysbench.opt.tables
   for _ = 1, sysbench.opt.point_selects do
      local t = sysbench.rand.uniform(1, tables)
      local id = sysbench.rand.default(1, sysbench.opt.table_size)
      con:query(string.format("SELECT c FROM sbtest%d WHERE id = %d", t, id))
   end
   con:query(string.format("SELECT BENCHMARK(%d, MD5('pooltune'))", sysbench.opt.cpu_rounds))
   -- sleep_ms = 0: CPU work only (no SLEEP statement at all).
   if sysbench.opt.sleep_ms > 0 then
      con:query(string.format("SELECT SLEEP(%.4f)", sysbench.opt.sleep_ms / 1000.0))
   end
end
