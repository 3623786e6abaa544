-- pooltune: a load whose nature changes every `phase_s` seconds.
--
-- Phases alternate by the wall clock (every client switches at the same second): in a
-- CPU phase an event sends `point_selects` primary-key selects and one
-- `SELECT BENCHMARK(cpu_rounds, MD5(...))`; in a wait phase it sends one primary-key
-- select and one `SELECT SLEEP(sleep_ms / 1000)`. A sweep that holds a pool size for a
-- few seconds sees one phase or the other: the curve of a workload that changes under
-- the tuner. Uses the tables `sbtest1..N` made by `sysbench oltp_read_only prepare`.
--
-- Usage: sysbench scripts/sysbench/phased.lua --mysql-...=... --tables=4 \
--          --table-size=10000 --phase-s=10 --threads=64 --time=60 run

sysbench.cmdline.options = {
   tables = {"Number of sbtest tables", 1},
   table_size = {"Rows per table", 10000},
   phase_s = {"Seconds of each phase", 10},
   point_selects = {"Primary-key selects per event in a CPU phase", 4},
   cpu_rounds = {"BENCHMARK() rounds of MD5 per event in a CPU phase", 2500},
   sleep_ms = {"SLEEP per event in a wait phase, milliseconds", 20},
}

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
end

function thread_done()
   con:disconnect()
end

local function point_select()
   local t = sysbench.rand.uniform(1, sysbench.opt.tables)
   local id = sysbench.rand.default(1, sysbench.opt.table_size)
   con:query(string.format("SELECT c FROM sbtest%d WHERE id = %d", t, id))
end

function event()
   local phase = math.floor(os.time() / sysbench.opt.phase_s) % 2
   if phase == 0 then
      for _ = 1, sysbench.opt.point_selects do
         point_select()
      end
      con:query(string.format("SELECT BENCHMARK(%d, MD5('pooltune'))", sysbench.opt.cpu_rounds))
   else
      point_select()
      con:query(string.format("SELECT SLEEP(%.4f)", sysbench.opt.sleep_ms / 1000.0))
   end
end
