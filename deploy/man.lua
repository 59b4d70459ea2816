-- pandoc filter: a docs/causeway*.md page as a man page.
--  * NAME "causeway agent - what" becomes "causeway-agent \- what", the
--    form lexgrog reads for whatis(1) and apropos(1);
--  * a table becomes a list tagged by its first cell, the other cells
--    under it (each after its column's heading when there are several),
--    since a terminal is narrower than most of our tables.

local function name_line(para)
	local text = pandoc.utils.stringify(para)
	local cmd, what = text:match('^causeway (%S+) %- (.*)$')
	local name = 'causeway'
	if cmd then
		name = name .. '-' .. cmd
	else
		what = text:match('^causeway %- (.*)$')
	end
	if not what then
		return para
	end
	return pandoc.RawBlock('man', name .. ' \\- ' .. what)
end

local function cell_inlines(blocks)
	return pandoc.utils.blocks_to_inlines(blocks)
end

local function table_list(tbl)
	local simple = pandoc.utils.to_simple_table(tbl)
	local items = {}
	for _, row in ipairs(simple.rows) do
		local defs = {}
		for j = 2, #row do
			local body = cell_inlines(row[j])
			if #simple.headers > 2 and #simple.headers[j] > 0 then
				local head = cell_inlines(simple.headers[j])
				head:insert(pandoc.Str(':'))
				body = pandoc.List({pandoc.Emph(head), pandoc.Space()})
					.. body
			end
			defs[#defs + 1] = pandoc.Para(body)
		end
		items[#items + 1] = {cell_inlines(row[1]), {defs}}
	end
	return pandoc.DefinitionList(items)
end

function Pandoc(doc)
	local blocks = pandoc.List()
	local after_name = false
	for _, b in ipairs(doc.blocks) do
		if b.t == 'Header' then
			after_name = pandoc.utils.stringify(b) == 'NAME'
		elseif after_name and b.t == 'Para' then
			b = name_line(b)
			after_name = false
		elseif b.t == 'Table' then
			b = table_list(b)
		end
		blocks:insert(b)
	end
	return pandoc.Pandoc(blocks, doc.meta)
end
