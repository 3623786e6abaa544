-- pooltune: a mixed application load, one kind of request per event drawn by weight.
--
-- Kinds: `point` (a primary-key select), `range` (SUM over a range of `range_size` ids),
-- `update` (one autocommit UPDATE of an indexed column: row locks, redo, index upkeep),
-- `cpu` (`SELECT BENCHMARK(cpu_rounds, MD5(...))`, server CPU) and `sleep` (`SELECT
-- SLEEP(sleep_ms / 1000)`, a server-side wait). The weights are integers; an event picks
-- a kind with probability weight / sum of weights. Uses the tables `sbtest1..N` made by
-- `sysbench oltp_read_only prepare`.
--
-- Usage: sysbench scripts/sysbench/mixed_oltp.lua --mysql-...=... --tables=4 \
--          --table-size=10000 --point-weight=70 --range-weight=15 --threads=64 run

sysbench.cmdline.options = {
   tables = {"Number of sbtest tables", 1},
   table_size = {"Rows per table", 10000},
   point_weight = {"Weight of a primary-key select", 70},
   range_weight = {"Weight of a range SUM", 15},
   update_weight = {"Weight of an indexed UPDATE", 10},
   cpu_weight = {"Weight of a BENCHMARK() statement", 4},
   sleep_weight = {"Weight of a SLEEP statement", 1},
   range_size = {"Ids in a range SUM", 100},
   cpu_rounds = {"BENCHMARK() rounds of MD5", 10000},
   sleep_ms = {"Milliseconds of a SLEEP", 50},
}

local kinds = {"point", "range", "update", "cpu", "sleep"}

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
   total_weight = 0
   for _, kind in ipairs(kinds) do
      total_weight = total_weight + sysbench.opt[kind .. "_weight"]
   end
   if total_weight <= 0 then
      error("the weights must not all be 0")
   end
end

function thread_done()
   con:disconnect()
end

local function pick()
   local draw = sysbench.rand.uniform(1, total_weight)
   for _, kind in ipairs(kinds) do
      draw = draw - sysbench.opt[kind .. "_weight"]
      if draw <= 0 then
         return kind
      end
   end
   return kinds[#kinds]
end

function event()
   local kind = pick()
   local t = sysbench.rand.uniform(1, sysbench.opt.tables)
   local id = sysbench.rand.default(1, sysbench.opt.table_size)
   if kind == "point" then
      con:query(string.format("SELECT c FROM sbtest%d WHERE id = %d", t, id))
   elseif kind == "range" then
      con:query(string.format("SELECT SUM(k) FROM sbtest%d WHERE id BETWEEN %d AND %d",
                              t, id, id + sysbench.opt.range_size - 1))
   elseif kind == "update" then
      con:query(string.format("UPDATE sbtest%d SET k = k + 1 WHERE id = %d", t, id))
   elseif kind == "cpu" then
      con:query(string.format("SELECT BENCHMARK(%d, MD5('pooltune'))", sysbench.opt.cpu_rounds))
   else
      con:query(string.format("SELECT SLEEP(%.4f)", sysbench.opt.sleep_ms / 1000.0))
   end
end
