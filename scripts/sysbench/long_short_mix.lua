-- pooltune: short statements with an occasional long one, so that thread groups stall.
--
-- Most events send `point_selects` primary-key selects (short); one event in `long_every`
-- instead runs one long statement: `SELECT BENCHMARK(long_cpu_rounds, MD5(...))` (pure
-- server CPU that never tells the thread pool it waits) with `--long-kind=cpu`, or
-- `SELECT SLEEP(long_sleep_ms / 1000)` (a wait the pool is told about) with
-- `--long-kind=sleep`. A group whose worker runs a long CPU statement makes the short
-- ones queued behind it wait until `thread_pool_stall_limit` declares the group stalled;
-- long waits let more workers run, up to `thread_pool_oversubscribe`. These are the loads
-- where the secondary knobs change throughput. Uses the tables `sbtest1..N` made by
-- `sysbench oltp_read_only prepare`.
--
-- Usage: sysbench scripts/sysbench/long_short_mix.lua --mysql-...=... --tables=4 \
--          --table-size=10000 --long-every=20 --long-kind=cpu --threads=64 --time=60 run

sysbench.cmdline.options = {
   tables = {"Number of sbtest tables", 1},
   table_size = {"Rows per table", 10000},
   point_selects = {"Primary-key selects per short event", 4},
   long_every = {"One event in this many runs the long statement instead", 20},
   long_kind = {"The long statement: cpu (BENCHMARK) or sleep (SLEEP)", "cpu"},
   long_cpu_rounds = {"BENCHMARK() rounds of MD5 of a long CPU statement", 100000},
   long_sleep_ms = {"Milliseconds of a long SLEEP statement", 200},
}

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
end

function thread_done()
   con:disconnect()
end

local function long_statement()
   if sysbench.opt.long_kind == "sleep" then
      con:query(string.format("SELECT SLEEP(%.4f)", sysbench.opt.long_sleep_ms / 1000.0))
   elseif sysbench.opt.long_kind == "cpu" then
      con:query(string.format("SELECT BENCHMARK(%d, MD5('pooltune'))",
                              sysbench.opt.long_cpu_rounds))
   else
      error("--long-kind must be cpu or sleep, not " .. tostring(sysbench.opt.long_kind))
   end
end

function event()
   if sysbench.rand.uniform(1, sysbench.opt.long_every) == 1 then
      long_statement()
      return
   end
   for _ = 1, sysbench.opt.point_selects do
      local t = sysbench.rand.uniform(1, sysbench.opt.tables)
      local id = sysbench.rand.default(1, sysbench.opt.table_size)
      con:query(string.format("SELECT c FROM sbtest%d WHERE id = %d", t, id))
   end
end
