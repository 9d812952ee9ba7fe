/**
 * A scripted, OpenAI-compatible chat model for the AI Agent tests: it answers n8n's OpenAI Chat Model
 * (Responses API `POST …/responses`, used by version 1.3, and Chat Completions `POST …/chat/completions`,
 * versions up to 1.2) by following a script of tool calls, and RECORDS every request body, so tests
 * assert what actually reached the model: the tool descriptions and schemas, the tool results, the
 * error texts. Not a language model: a stand-in for one, because none can run here.
 *
 * A script is picked by the marker `[scenario:NAME]` in the user's messages (or the default scenario).
 * It is a function of the conversation so far — { userText, message, system, tools, results, history }:
 * `message` is the user's current message, `results` the tool calls of this turn already answered,
 * each { name, args, output, json }, and `history` what came before the current message (an agent's
 * memory): { messages: [{ role, text }], results } — returning the next move:
 *   { call: { name, args } } | { calls: [{ name, args }, …] } | { answer: 'text' }.
 */
import http from 'node:http';

/** Tool results arrive as text; n8n sends JSON. Parsed when possible. */
function parse(text) {
	try {
		return JSON.parse(text);
	} catch {
		return undefined;
	}
}

const textOf = (content) =>
	typeof content === 'string' ? content : Array.isArray(content) ? content.map((part) => part.text ?? '').join('') : '';

/**
 * Splits a conversation at the user's last message: what came before is history (memory), the tool
 * calls answered after it are this turn's results. `entries` are { role, text } or { call } / { result }.
 */
function splitTurns(entries) {
	const last = entries.findLastIndex((entry) => entry.role === 'user');
	const calls = new Map();
	const history = { messages: [], results: [] };
	const results = [];
	let system = '';
	entries.forEach((entry, index) => {
		if (entry.call) calls.set(entry.call.id, entry.call);
		else if (entry.result) {
			const output = entry.result.output;
			const result = { ...calls.get(entry.result.id), output, json: parse(output) };
			(index > last ? results : history.results).push(result);
		} else if (entry.role === 'system' || entry.role === 'developer') system += entry.text;
		else if (index < last) history.messages.push({ role: entry.role, text: entry.text });
	});
	const userText = entries.filter((entry) => entry.role === 'user').map((entry) => entry.text).join('\n');
	return { userText, message: entries[last]?.text ?? '', system, results, history };
}

/** The conversation of a Chat Completions request, normalized. */
function fromChatCompletions(body) {
	const entries = [];
	for (const message of body.messages ?? []) {
		if (message.role === 'tool') entries.push({ result: { id: message.tool_call_id, output: textOf(message.content) } });
		else entries.push({ role: message.role, text: textOf(message.content) });
		for (const call of message.tool_calls ?? []) entries.push({ call: { id: call.id, name: call.function.name, args: parse(call.function.arguments) } });
	}
	const tools = (body.tools ?? []).map(({ function: f }) => ({ name: f.name, description: f.description, parameters: f.parameters }));
	return { tools, ...splitTurns(entries) };
}

/** The conversation of a Responses API request, normalized. */
function fromResponses(body) {
	const entries = body.instructions ? [{ role: 'system', text: body.instructions }] : [];
	const input = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : (body.input ?? []);
	for (const item of input) {
		if (item.type === 'function_call') entries.push({ call: { id: item.call_id, name: item.name, args: parse(item.arguments) } });
		else if (item.type === 'function_call_output') {
			entries.push({ result: { id: item.call_id, output: typeof item.output === 'string' ? item.output : JSON.stringify(item.output) } });
		} else if (item.role) entries.push({ role: item.role, text: textOf(item.content) });
	}
	const tools = (body.tools ?? []).filter((tool) => tool.type === 'function').map(({ name, description, parameters }) => ({ name, description, parameters }));
	return { tools, ...splitTurns(entries) };
}

let counter = 0;
const nextId = (prefix) => `${prefix}_${(++counter).toString(36).padStart(6, '0')}`;
const usage = { input_tokens: 10, output_tokens: 5, total_tokens: 15 };

function responsesReply(body, move) {
	const calls = move.calls ?? (move.call ? [move.call] : []);
	const output = calls.length
		? calls.map((call) => ({
				type: 'function_call',
				id: nextId('fc'),
				call_id: nextId('call'),
				name: call.name,
				arguments: JSON.stringify(call.args ?? {}),
				status: 'completed',
			}))
		: [
				{
					type: 'message',
					id: nextId('msg'),
					role: 'assistant',
					status: 'completed',
					content: [{ type: 'output_text', text: move.answer, annotations: [] }],
				},
			];
	return {
		id: nextId('resp'),
		object: 'response',
		created_at: Math.floor(Date.now() / 1000),
		status: 'completed',
		model: body.model,
		output,
		usage,
		error: null,
		incomplete_details: null,
	};
}

function chatReply(body, move) {
	const calls = move.calls ?? (move.call ? [move.call] : []);
	const message = calls.length
		? {
				role: 'assistant',
				content: null,
				tool_calls: calls.map((call) => ({
					id: nextId('call'),
					type: 'function',
					function: { name: call.name, arguments: JSON.stringify(call.args ?? {}) },
				})),
			}
		: { role: 'assistant', content: move.answer };
	return {
		id: nextId('chatcmpl'),
		object: 'chat.completion',
		created: Math.floor(Date.now() / 1000),
		model: body.model,
		choices: [{ index: 0, message, finish_reason: calls.length ? 'tool_calls' : 'stop', logprobs: null }],
		usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
	};
}

/** Chat Completions as server-sent events, for clients that ask for a stream. */
function chatStream(res, reply) {
	const { message } = reply.choices[0];
	const base = { id: reply.id, object: 'chat.completion.chunk', created: reply.created, model: reply.model };
	const delta = message.tool_calls
		? { role: 'assistant', tool_calls: message.tool_calls.map((call, index) => ({ index, ...call })) }
		: { role: 'assistant', content: message.content };
	res.writeHead(200, { 'content-type': 'text/event-stream' });
	res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`);
	res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: reply.choices[0].finish_reason }], usage: reply.usage })}\n\n`);
	res.end('data: [DONE]\n\n');
}

/**
 * Starts the model on a free local port. `scenarios` maps names to scripts (see above);
 * `defaultScenario` plays when a conversation names none (a person typing in n8n's chat). Returns
 * { baseUrl (for the OpenAI credential's Base URL), requests, forScenario(name), close() }; each
 * request is { api, path, body, scenario, userText, tools, results, move }.
 */
export async function startScriptedModel({ scenarios, defaultScenario }) {
	const requests = [];
	const server = http.createServer((req, res) => {
		const chunks = [];
		req.on('data', (chunk) => chunks.push(chunk));
		req.on('end', () => {
			const path = new URL(req.url, 'http://localhost').pathname;
			const fail = (status, message) => {
				res.writeHead(status, { 'content-type': 'application/json' });
				res.end(JSON.stringify({ error: { message, type: 'invalid_request_error', code: null } }));
			};
			if (req.method !== 'POST' || !/\/(responses|chat\/completions)$/.test(path)) return fail(404, `scripted model: no route ${req.method} ${path}`);
			const body = parse(Buffer.concat(chunks).toString('utf8')) ?? {};
			const api = path.endsWith('/responses') ? 'responses' : 'chat';
			const conversation = api === 'responses' ? fromResponses(body) : fromChatCompletions(body);
			const scenario = /\[scenario:([\w-]+)\]/.exec(conversation.userText)?.[1] ?? defaultScenario;
			const entry = { api, path, body, scenario, ...conversation };
			requests.push(entry);
			const script = scenarios[scenario];
			if (!script) return fail(400, `scripted model: no scenario "${scenario}" in the user message`);
			try {
				entry.move = script(conversation);
			} catch (error) {
				return fail(500, `scripted model: the script of "${scenario}" failed: ${error.message}`);
			}
			if (api === 'responses') {
				if (body.stream) return fail(400, 'scripted model: streaming of the Responses API is not scripted');
				res.writeHead(200, { 'content-type': 'application/json' });
				return res.end(JSON.stringify(responsesReply(body, entry.move)));
			}
			const reply = chatReply(body, entry.move);
			if (body.stream) return chatStream(res, reply);
			res.writeHead(200, { 'content-type': 'application/json' });
			res.end(JSON.stringify(reply));
		});
	});
	await new Promise((resolve, reject) => {
		server.once('error', reject);
		server.listen(0, '127.0.0.1', resolve);
	});
	return {
		baseUrl: `http://127.0.0.1:${server.address().port}/v1`,
		requests,
		forScenario: (name) => requests.filter((request) => request.scenario === name),
		close: () => new Promise((resolve) => server.close(() => resolve())),
	};
}
