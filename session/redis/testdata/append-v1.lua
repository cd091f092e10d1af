-- The append script of the version before placeCache (commit 9c841ce),
-- for TestRollingUpgrade: KEYS as appendLua's, ARGV the run ID and the
-- batch alone, no prepared form before it. It returns 0, or 1 when it
-- placed the session's first run, or a refusal as appendLua does.
local function many(cmd, key, args)
	for i = 1, #args, 2000 do
		redis.call(cmd, key, unpack(args, i, math.min(i + 1999, #args)))
	end
end
local run, a = ARGV[1], cmsgpack.unpack(ARGV[2])
local roles = a[1]
local n = #roles - 1
local rb = {}
if n < 4000 then
	rb = {string.byte(roles, 1, n + 1)}
else
	for i = 1, n + 1 do rb[i] = string.byte(roles, i) end
end
local place = redis.call('HGET', KEYS[2], run)
local idk, j = {}, 2 + n
for i = 1, n do
	if rb[i] ~= 110 then idk[i], j = a[j], j + 1 end
end
local fresh, answers, zero = nil, {}, '0000000000000000'
-- The common batch: Seqs ascending (rb[n + 1] is "a"), each item after
-- the run's last stored one (nothing stored at or after the first item's
-- position: one count, an integer reply), each output after a call of its
-- ID in the batch unless the run is new. Nothing to look up.
local fast = rb[n + 1] == 97
if fast and place then
	fast = redis.call('ZLEXCOUNT', KEYS[1], '[' .. place .. string.sub(a[2], 1, 16), '(' .. place .. '\255') == 0
end
if fast then
	local lastCall, answered, callOf = {}, {}, {}
	for i = 1, n do
		local r = rb[i]
		if r == 99 then
			lastCall[idk[i]] = i
		elseif r == 111 then
			local c = lastCall[idk[i]]
			if c == nil and place then fast = false break end
			local key = c or idk[i]
			if answered[key] then return 'dup:' .. string.sub(a[1 + i], 1, 16) end
			answered[key], callOf[i] = true, c or false
		end
	end
	if fast then
		for o, c in pairs(callOf) do
			local call = zero
			if c then call = string.sub(a[1 + c], 1, 16) end
			answers[idk[o] .. call] = string.sub(a[1 + o], 1, 16)
		end
	end
end
if not fast then
	local last
	if place then
		last = redis.call('ZREVRANGEBYLEX', KEYS[1], '(' .. place .. '\255', '[' .. place, 'LIMIT', 0, 1)[1]
		if last then last = string.sub(last, 1, 32) end
	end
	fresh, answers = {}, {}
	local bound = last and last .. '\255'
	local seen, seqs = {}, {}
	for i = 1, n do
		local arg = a[1 + i]
		local seq, val = string.sub(arg, 1, 16), string.sub(arg, 17)
		local prev = seen[seq]
		if prev == nil and bound then
			local pos = place .. seq
			if pos < bound then
				local m = redis.call('ZRANGEBYLEX', KEYS[1], '[' .. pos, '(' .. pos .. '\255', 'LIMIT', 0, 1)[1]
				if m then prev = string.sub(m, 33) end
			end
		end
		if prev == nil then
			fresh[#fresh + 1] = i
			seen[seq], seqs[i] = val, seq
		elseif prev ~= val then
			return seq
		end
	end
	if #fresh == 0 then return 0 end
	local batchCalls = {}
	for _, i in ipairs(fresh) do
		if rb[i] == 99 then
			local l = batchCalls[idk[i]] or {}
			l[#l + 1] = seqs[i]
			batchCalls[idk[i]] = l
		end
	end
	for _, i in ipairs(fresh) do
		if rb[i] == 111 then
			local k, seq = idk[i], seqs[i]
			local call = zero
			for _, c in ipairs(batchCalls[k] or {}) do
				if c < seq and c > call then call = c end
			end
			local prev
			-- A call of the batch placed after the run's last stored item is
			-- later than every stored call, and no stored output answers it:
			-- no lookup (a call and its output appended together).
			if place and (call == zero or (last and place .. call <= last)) then
				local m = redis.call('ZREVRANGEBYLEX', KEYS[4], '(' .. place .. k .. seq, '[' .. place .. k, 'LIMIT', 0, 1)[1]
				if m then
					local c = string.sub(m, -16)
					if c > call then call = c end
				end
				prev = redis.call('HGET', KEYS[5], place .. k .. call)
			end
			prev = answers[k .. call] or prev
			if prev and prev ~= seq then return 'dup:' .. seq end
			answers[k .. call] = seq
		end
	end
end
local created = 0
if not place then
	local p = redis.call('INCR', KEYS[3])
	place = string.format('%016x', p)
	redis.call('HSET', KEYS[2], run, place)
	redis.call('HSET', KEYS[5], 'p' .. place, run)
	if p == 1 then created = 1 end
end
local stamp = tostring(redis.call('INCR', KEYS[7]))
local items, stamps, calls, fields = {}, {}, {}, {}
for x = 1, fresh and #fresh or n do
	local i = fresh and fresh[x] or x
	local m = place .. a[1 + i]
	local pos = string.sub(m, 1, 32)
	items[#items + 1], items[#items + 2] = '0', m
	stamps[#stamps + 1], stamps[#stamps + 2] = stamp, pos
	if rb[i] == 99 then
		local cm = place .. idk[i] .. string.sub(m, 17, 32)
		calls[#calls + 1], calls[#calls + 2] = '0', cm
		fields[#fields + 1], fields[#fields + 2] = 'r' .. pos, 'c' .. cm
	end
end
for field, seq in pairs(answers) do
	local f, at = place .. field, #fields
	fields[at + 1], fields[at + 2], fields[at + 3], fields[at + 4] = f, seq, 'r' .. place .. seq, 'a' .. f
end
many('ZADD', KEYS[1], items)
many('ZADD', KEYS[6], stamps)
if #calls > 0 then many('ZADD', KEYS[4], calls) end
if #fields > 0 then many('HSET', KEYS[5], fields) end
return created
