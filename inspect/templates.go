package inspect

import "html/template"

// pages are the inspector's templates: one layout, one block per page.
// Everything stored is written through html/template's escaping, as text
// in element content, attribute values and URL query values; no page
// holds a script.
var pages = template.Must(template.New("pages").Funcs(template.FuncMap{
	"list": func(s ...string) []string { return s },
}).Parse(`
{{define "head"}}<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} inspector</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1b1b1b;background:#fafafa}
header{background:#23303f;color:#fff;padding:.5em 1em;display:flex;gap:1.5em;align-items:baseline}
header a{color:#cfe3ff;text-decoration:none}header a.on{color:#fff;font-weight:600}
main{padding:1em;max-width:75em}
table{border-collapse:collapse;width:100%;background:#fff}
td,th{border:1px solid #ddd;padding:.3em .5em;vertical-align:top;text-align:left}
th{background:#f0f0f0}
pre{white-space:pre-wrap;word-break:break-word;margin:0;font:12px/1.35 ui-monospace,monospace}
.kind{font:12px ui-monospace,monospace;color:#555}
.notice{background:#e6f4ea;border:1px solid #8c8;padding:.5em}
.error{background:#fde8e8;border:1px solid #d88;padding:.5em}
.pending{background:#fff8e1}
form.inline{display:inline}
img{max-width:20em;max-height:20em}
</style></head><body>
<header><strong>{{.Title}}</strong>
<a href="./" {{if eq .Nav "sessions"}}class="on"{{end}}>Sessions</a>
<a href="runs" {{if eq .Nav "runs"}}class="on"{{end}}>Runs</a>
<a href="runs?status=paused">Paused</a>
{{if not .Writes}}<span>read-only</span>{{end}}</header>
<main>{{if .Notice}}<p class="notice" id="notice">{{.Notice}}</p>{{end}}
{{end}}

{{define "foot"}}</main></body></html>{{end}}

{{define "error"}}{{template "head" .}}<p class="error" id="error">{{.Error}}</p>{{template "foot" .}}{{end}}

{{define "sessions"}}{{template "head" .}}{{with .Data}}
<h1>Sessions</h1>
<form method="get" action="./"><input name="q" value="{{.Query}}" placeholder="session ID prefix"> <button>Search</button></form>
<form method="get" action="session"><input name="id" placeholder="session ID"> <button>Open</button></form>
{{if .Listed}}
<table id="sessions"><tr><th>Session</th><th></th></tr>
{{range .IDs}}<tr><td><a href="session?id={{.}}">{{.}}</a></td><td><a href="runs?session={{.}}">runs</a></td></tr>
{{else}}<tr><td colspan="2">No sessions{{if .Query}} starting with “{{.Query}}”{{end}}.</td></tr>{{end}}
</table>
{{if .Next}}<p><a id="next" href="./?q={{.Query}}&amp;cursor={{.Next}}">Next page</a></p>{{end}}
{{else}}<p>This session store does not list sessions: open one by its ID.</p>{{end}}
{{end}}{{template "foot" .}}{{end}}

{{define "runs"}}{{template "head" .}}{{with .Data}}
<h1>Runs</h1>
<form method="get" action="runs">
<select name="status"><option value="">every status</option>
{{range $s := (list "paused" "unfinished" "finished")}}<option value="{{$s}}" {{if eq $s $.Data.Status}}selected{{end}}>{{$s}}</option>{{end}}
</select> <input name="session" value="{{.Session}}" placeholder="session ID"> <button>Filter</button></form>
<form method="get" action="run"><input name="id" placeholder="run ID"> <button>Open</button></form>
{{if .Listed}}
<table id="runs"><tr><th>Run</th><th>Status</th><th>Pending</th><th>Agent</th><th>Turn</th><th>Session</th><th>Version</th></tr>
{{range .Runs}}<tr{{if eq .Status.String "paused"}} class="pending"{{end}}><td><a href="run?id={{.RunID}}">{{.RunID}}</a></td>
<td>{{.Status}}</td><td>{{.Pending}}</td><td>{{.Agent}}</td><td>{{.Turn}}</td>
<td>{{if .SessionID}}<a href="session?id={{.SessionID}}">{{.SessionID}}</a>{{end}}</td><td>{{.Version}}</td></tr>
{{else}}<tr><td colspan="7">No runs.</td></tr>{{end}}
</table>
{{if .Next}}<p><a id="next" href="runs?status={{.Status}}&amp;session={{.Session}}&amp;cursor={{.Next}}">Next page</a></p>{{end}}
{{else}}<p>This checkpoint store does not list runs: open one by its ID.</p>{{end}}
{{end}}{{template "foot" .}}{{end}}

{{define "item"}}<span class="kind">#{{.Seq}} {{.Kind}}{{if .Name}} {{.Name}}{{end}}{{if .CallID}} ({{.CallID}}){{end}}</span>
{{if .Hosted}}<div>status: {{.Text}}</div>{{else if .Parts}}{{range .Parts}}<div class="part">
{{if .Image}}<img src="{{.Image}}" alt="image">{{else if .Text}}<pre>{{.Text}}</pre>{{else}}[{{.Type}}{{if .FileName}} file “{{.FileName}}”{{end}}{{if .FileID}} id {{.FileID}}{{end}}{{if .URL}} {{.URL}}{{end}}]{{end}}
</div>{{end}}{{else}}<pre>{{.Text}}</pre>{{end}}{{end}}

{{define "session"}}{{template "head" .}}{{with .Data}}
<h1>Session {{.ID}}</h1>
<p><a href="runs?session={{.ID}}">Runs of this session</a>{{if .Next}} · <a id="older" href="session?id={{.ID}}&amp;cursor={{.Next}}">Older items</a>{{end}}</p>
<table id="timeline"><tr><th>Run</th><th>Item</th><th>Output</th></tr>
{{range .Rows}}<tr><td>{{if .Item.RunID}}<a href="run?id={{.Item.RunID}}">{{.Item.RunID}}</a>{{end}}</td>
<td class="item">{{template "item" .Item}}{{range .Notes}}<div class="note {{.Class}}">{{.Text}}</div>{{end}}</td>
<td class="output">{{with .Output}}{{template "item" .}}{{end}}</td></tr>
{{else}}<tr><td colspan="3">No items.</td></tr>{{end}}
</table>
{{if .Next}}<p><a href="session?id={{.ID}}&amp;cursor={{.Next}}">Older items</a></p>{{end}}
{{end}}{{template "foot" .}}{{end}}

{{define "run"}}{{template "head" .}}{{$csrf := .CSRF}}{{$writes := .Writes}}{{with .Data}}
<h1>Run {{.ID}}</h1>
<table id="summary">
<tr><th>Status</th><td id="status">{{.Status}}</td></tr>
<tr><th>Agent</th><td>{{.Agent}}</td></tr>
<tr><th>Turn</th><td>{{.Turn}}{{if .MaxTurns}} of {{.MaxTurns}}{{end}}</td></tr>
<tr><th>Version</th><td>{{.Version}}</td></tr>
<tr><th>Session</th><td>{{if .SessionID}}<a href="session?id={{.SessionID}}">{{.SessionID}}</a>{{end}}</td></tr>
<tr><th>Usage</th><td>{{.Usage.Requests}} requests, {{.Usage.InputTokens}} in, {{.Usage.OutputTokens}} out</td></tr>
<tr><th>Trace</th><td>{{if .TraceURL}}<a href="{{.TraceURL}}" rel="noreferrer">{{.TraceID}}</a>{{else}}{{.TraceID}}{{end}}</td></tr>
<tr><th>Signature</th><td id="signature">{{if .Verified}}{{.Verified}}{{else}}not checked{{end}}</td></tr>
{{if .Finished}}<tr><th>Final output</th><td><pre id="final">{{.Final}}</pre></td></tr>{{end}}
</table>
<h2>Pending approvals</h2>
<table id="pending"><tr><th>Call</th><th>Tool</th><th>Arguments</th><th>Decision</th></tr>
{{range .Pending}}<tr class="pending"><td>{{.CallID}}{{if .Owner}} (in {{.Owner}}){{end}}</td><td>{{.Tool}}</td><td><pre>{{.Arguments}}</pre>{{if .IsElicitation}}<p class="elicitation">{{.Elicitation.Server}} asks: {{.Elicitation.Message}}</p>{{if .Elicitation.Schema}}<pre class="schema">{{.Elicitation.Schema}}</pre>{{end}}{{end}}</td>
<td>{{if .Decided}}{{.Decided}}{{else if .IsElicitation}}waits for an answer{{else if $writes}}
<form class="inline" method="post" action="decide"><input type="hidden" name="csrf" value="{{$csrf}}"><input type="hidden" name="run" value="{{$.Data.ID}}"><input type="hidden" name="call" value="{{.CallID}}"><input type="hidden" name="verdict" value="approve"><button name="approve" value="{{.CallID}}">Approve</button></form>
<form class="inline" method="post" action="decide"><input type="hidden" name="csrf" value="{{$csrf}}"><input type="hidden" name="run" value="{{$.Data.ID}}"><input type="hidden" name="call" value="{{.CallID}}"><input type="hidden" name="verdict" value="reject"><input name="reason" placeholder="reason"> <button name="reject" value="{{.CallID}}">Reject</button></form>
{{else}}undecided{{end}}</td></tr>
{{else}}<tr><td colspan="4">None.</td></tr>{{end}}
</table>
<h2>Decisions</h2>
<table id="decisions"><tr><th>Tool</th><th>Call</th><th>Verdict</th><th>Message</th></tr>
{{range .Decisions}}<tr><td>{{.Tool}}</td><td>{{if .Always}}every call{{else}}{{.CallID}}{{end}}</td><td>{{.Verdict}}</td><td>{{.Message}}</td></tr>
{{else}}<tr><td colspan="4">None.</td></tr>{{end}}
</table>
<h2>Guardrails</h2>
<table id="guardrails"><tr><th>Name</th><th>Stage</th><th>Turn</th><th>Verdict</th><th>Message</th><th>Info</th></tr>
{{range .Guards}}<tr><td>{{.Name}}</td><td>{{.Stage}}</td><td>{{.Turn}}</td><td>{{if .Tripped}}tripped{{else}}passed{{if .Behavior}} ({{.Behavior}}){{end}}{{end}}</td><td>{{.Message}}</td><td><pre>{{.Info}}</pre></td></tr>
{{else}}<tr><td colspan="6">None.</td></tr>{{end}}
</table>
{{end}}{{template "foot" .}}{{end}}
`))
