// The @openai/agents peer of turnkit's run scenario: a user message, N turns
// that each make one model call answered by one call to a trivial tool, then
// a final message, on a fake model implementing the SDK's own Model
// interface. It prints one JSON object per run length on stdout:
//
//   {"peer":"openai-agents-js","version":"0.20.0","node":"v20.20.2","turns":100,"n":57,"ns_per_turn":...}
//
// Usage: node bench.mjs [--turns 10,100,1000] [--ms 1000] [--check]
// --check runs each length once and verifies the scenario instead of timing.

import { readFileSync } from 'node:fs';
import { Agent, Runner, Usage, setTracingDisabled, tool } from '@openai/agents';

setTracingDisabled(true); // no exporter: turnkit runs without a trace provider too

// FakeModel answers while the input holds fewer than `turns` tool results
// with one call to the echo tool, then with a final message. It reads only
// input.length (the user message, then a call and an output per turn), so
// its own cost does not grow with the history.
export class FakeModel {
  constructor(turns) {
    this.turns = turns;
  }

  async getResponse(request) {
    const input = request.input;
    const done = typeof input === 'string' ? 0 : (input.length - 1) / 2;
    if (done >= this.turns) {
      return {
        usage: new Usage(),
        output: [{
          type: 'message', id: 'msg_final', role: 'assistant', status: 'completed',
          content: [{ type: 'output_text', text: 'done' }],
        }],
      };
    }
    const n = done + 1;
    return {
      usage: new Usage(),
      output: [{
        type: 'function_call', id: 'fc_' + n, callId: 'call_' + n, name: 'echo',
        arguments: '{}', status: 'completed',
      }],
    };
  }

  async *getStreamedResponse() {
    throw new Error('FakeModel: streaming is not part of the scenario');
  }
}

const echo = tool({
  name: 'echo',
  description: 'Returns ok.',
  parameters: { type: 'object', properties: {}, required: [], additionalProperties: false },
  strict: true,
  execute: async () => 'ok',
});

function newAgent(turns) {
  return new Agent({ name: 'bench', instructions: '', model: new FakeModel(turns), tools: [echo] });
}

async function runOnce(runner, agent, turns) {
  const result = await runner.run(agent, 'go', { maxTurns: turns + 2 });
  if (result.finalOutput !== 'done') {
    throw new Error(`the run ended with ${JSON.stringify(result.finalOutput)}, want the final message`);
  }
  return result;
}

function parseArgs(argv) {
  const args = { turns: [10, 100, 1000], ms: 1000, check: false };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--turns') args.turns = argv[++i].split(',').map(Number);
    else if (argv[i] === '--ms') args.ms = Number(argv[++i]);
    else if (argv[i] === '--check') args.check = true;
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  if (args.turns.some((t) => !Number.isInteger(t) || t < 1)) throw new Error('--turns: positive integers');
  return args;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const version = JSON.parse(readFileSync(new URL('./node_modules/@openai/agents/package.json', import.meta.url))).version;
  const runner = new Runner({ tracingDisabled: true });
  for (const turns of args.turns) {
    const agent = newAgent(turns);
    if (args.check) {
      const result = await runOnce(runner, agent, turns);
      const calls = result.newItems.filter((it) => it.type === 'tool_call_item').length;
      const outputs = result.newItems.filter((it) => it.type === 'tool_call_output_item').length;
      if (calls !== turns || outputs !== turns) {
        throw new Error(`a run of ${turns} turns made ${calls} calls and ${outputs} outputs`);
      }
      console.log(JSON.stringify({ peer: 'openai-agents-js', version, turns, check: 'ok' }));
      continue;
    }
    // Warm up the JIT for a tenth of the time, then time whole runs.
    const warm = Date.now() + args.ms / 10;
    while (Date.now() < warm) await runOnce(runner, agent, turns);
    let n = 0;
    const start = process.hrtime.bigint();
    const until = start + BigInt(args.ms) * 1000000n;
    let now = start;
    do {
      await runOnce(runner, agent, turns);
      n++;
      now = process.hrtime.bigint();
    } while (now < until);
    const ns = Number(now - start);
    console.log(JSON.stringify({
      peer: 'openai-agents-js', version, node: process.version, turns, n, ns_per_turn: ns / (n * turns),
    }));
  }
}

main().catch((err) => {
  console.error('bench.mjs:', err && err.stack ? err.stack : err);
  process.exit(1);
});
