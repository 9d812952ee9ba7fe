/**
 * The two listeners: the public API (plus the control API under /_emulator) and the signed-link file
 * host. Public responses are written raw (after reply.hijack) so injected faults can reset sockets,
 * truncate or slow bodies exactly like a real network would.
 */
import { randomBytes, timingSafeEqual } from 'crypto';
import Fastify from 'fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sleep } from 'n8n-workflow';

import { ApiError, CODE_FOR_STATUS, MESSAGE_FOR_CODE, errorBody, languageOf, parseJson } from './errors';
import { generate } from './generate';
import { renderPng } from './png';
import type { ApiKeyRecord, EmulatorState, Fault, RequestLogEntry, RouteName } from './state';
import { SIGNED_LINK_TTL_MS } from './state';

/** Shared by both listeners and the control API; `state` is replaced on reset. */
export interface Runtime {
	state: EmulatorState;
	fileBaseUrl: string;
	/** Aborted on close so sleeping handlers end promptly. */
	abort: AbortController;
}

export const CONTROL_PREFIX = '/_emulator';

interface Out {
	status: number;
	headers: Record<string, string>;
	body: Buffer;
	/** false for a proxy's HTML page: it does not come from the service. */
	requestIdHeader?: boolean;
}

interface Ctx {
	runtime: Runtime;
	state: EmulatorState;
	entry: RequestLogEntry;
	requestId: string;
	fault?: Fault;
}

const contexts = new WeakMap<FastifyRequest, Ctx>();

const JSON_TYPE = 'application/json; charset=utf-8';

export function jsonOut(status: number, value: unknown, headers: Record<string, string> = {}): Out {
	return { status, headers: { 'content-type': JSON_TYPE, ...headers }, body: Buffer.from(JSON.stringify(value)) };
}

function errorOut(err: ApiError, requestId: string): Out {
	return jsonOut(err.status, errorBody(err, requestId), err.headers);
}

function toApiError(err: unknown): ApiError {
	if (err instanceof ApiError) return err;
	const status = (err as { statusCode?: number })?.statusCode;
	if (status === 413) return new ApiError(413, 'invalid_request', '请求体过大。', 'body');
	if (status && status >= 400 && status < 500) {
		return new ApiError(status, 'invalid_request', '请求无效。');
	}
	return new ApiError(500, 'internal_error', '服务内部错误，请稍后重试。');
}

function newRequestId(): string {
	return `req_${randomBytes(10).toString('hex')}`;
}

function flatHeaders(req: FastifyRequest): Record<string, string> {
	const headers: Record<string, string> = {};
	for (const [name, value] of Object.entries(req.headers)) {
		if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
	}
	return headers;
}

/** Logs every non-control request on arrival, so the log order is arrival order. */
function attachContext(runtime: Runtime, listener: 'api' | 'files', req: FastifyRequest) {
	if (listener === 'api' && req.url.startsWith(CONTROL_PREFIX)) return;
	const url = new URL(req.url, 'http://emulator');
	const route = (req.routeOptions.config as { routeName?: RouteName }).routeName ?? 'unknown';
	const requestId = newRequestId();
	const state = runtime.state;
	const entry = state.logRequest({
		listener,
		route,
		method: req.method,
		path: url.pathname,
		query: Object.fromEntries(url.searchParams),
		headers: flatHeaders(req),
		requestId,
	});
	contexts.set(req, { runtime, state, entry, requestId });
}

function writeOut(ctx: Ctx, reply: FastifyReply, out: Out) {
	const headers: Record<string, string> = { ...out.headers, 'content-length': String(out.body.length) };
	if (out.requestIdHeader !== false) headers['x-request-id'] = ctx.requestId;
	ctx.entry.status = out.status;
	if (!reply.sent) reply.hijack();
	const res = reply.raw;
	if (res.destroyed) return;
	res.writeHead(out.status, headers);
	res.end(out.body);
}

function resetConnection(ctx: Ctx, reply: FastifyReply) {
	ctx.entry.status = null;
	if (!reply.sent) reply.hijack();
	reply.raw.socket?.destroy();
}

const HTML_PAGE = (status: number) =>
	`<html>\r\n<head><title>${status} Bad Gateway</title></head>\r\n<body>\r\n<center><h1>${status} Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n`;

function faultOut(fault: Fault, ctx: Ctx): Out {
	const { spec } = fault;
	if (fault.kind === 'html') {
		const status = spec.status ?? 502;
		return {
			status,
			headers: { 'content-type': 'text/html', server: 'nginx' },
			body: Buffer.from(HTML_PAGE(status)),
			requestIdHeader: spec.withRequestId ?? false,
		};
	}
	const status = spec.status ?? 500;
	const code = spec.code ?? CODE_FOR_STATUS[status] ?? 'internal_error';
	const headers: Record<string, string> = {};
	const retryAfter = spec.retryAfter ?? (status === 429 ? 1 : undefined);
	if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
	const message = spec.message ?? MESSAGE_FOR_CODE[code] ?? MESSAGE_FOR_CODE.internal_error;
	return errorOut(new ApiError(status, code, message, undefined, headers), ctx.requestId);
}

/** Applies a fault to the response the handler produced (work already done, credits charged). */
async function sendWithFault(ctx: Ctx, reply: FastifyReply, out: Out, fault: Fault) {
	const signal = ctx.runtime.abort.signal;
	switch (fault.kind) {
		case 'status':
		case 'html':
			return writeOut(ctx, reply, faultOut(fault, ctx));
		case 'reset':
			return resetConnection(ctx, reply);
		case 'malformedJson': {
			const cut = out.body.subarray(0, Math.max(1, Math.floor(out.body.length / 2)));
			return writeOut(ctx, reply, { ...out, body: Buffer.concat([cut, Buffer.from('<!-- malformed')]) });
		}
		case 'truncate': {
			// Announce the full length, send half, then drop the connection.
			ctx.entry.status = out.status;
			reply.hijack();
			const res = reply.raw;
			res.writeHead(out.status, {
				...out.headers,
				'content-length': String(out.body.length),
				'x-request-id': ctx.requestId,
			});
			res.write(out.body.subarray(0, Math.floor(out.body.length / 2)), () => res.socket?.destroy());
			return;
		}
		case 'slow': {
			// Headers now, the body in ten pieces spread over delayMs.
			ctx.entry.status = out.status;
			reply.hijack();
			const res = reply.raw;
			res.writeHead(out.status, {
				...out.headers,
				'content-length': String(out.body.length),
				'x-request-id': ctx.requestId,
			});
			const pieces = 10;
			const size = Math.ceil(out.body.length / pieces);
			const delay = (fault.spec.delayMs ?? 2000) / pieces;
			for (let i = 0; i < pieces && !res.destroyed; i++) {
				await sleep(delay, signal).catch(() => undefined);
				res.write(out.body.subarray(i * size, (i + 1) * size));
			}
			if (!res.destroyed) res.end();
			return;
		}
	}
}

/**
 * Runs one public request: a "before" fault, route latency, the work, then the response (through an
 * "after" fault if one is pending).
 */
async function handle(
	route: RouteName,
	req: FastifyRequest,
	reply: FastifyReply,
	work: (ctx: Ctx) => Promise<Out>,
) {
	const ctx = contexts.get(req)!;
	ctx.entry.prompt = promptOf(req.body) ?? null;
	const fault = ctx.state.takeFault(route, ctx.entry.prompt ?? undefined);
	if (fault) ctx.entry.fault = `${fault.kind}:${fault.when}`;
	// hold before: the service has not seen the request yet; a client gone meanwhile means it never will.
	if (fault?.kind === 'hold' && fault.when === 'before' && !(await holdRequest(ctx, reply, fault))) {
		return resetConnection(ctx, reply);
	}
	if (fault?.when === 'before') {
		if (fault.kind === 'reset') return resetConnection(ctx, reply);
		if (fault.kind === 'status' || fault.kind === 'html') return writeOut(ctx, reply, faultOut(fault, ctx));
		if (fault.kind === 'slow') await sleep(fault.spec.delayMs ?? 2000, ctx.runtime.abort.signal).catch(() => undefined);
	}
	let out: Out;
	try {
		if (route !== 'generate') {
			const latency = ctx.state.latencyFor(route);
			if (latency > 0) await sleep(latency, ctx.runtime.abort.signal);
		}
		out = await work(ctx);
	} catch (err) {
		out = errorOut(toApiError(err), ctx.requestId);
	}
	if (ctx.runtime.abort.signal.aborted) return resetConnection(ctx, reply);
	// hold after: the work is done (a generation charged); the answer waits, and is lost if the client goes.
	if (fault?.kind === 'hold') {
		if (fault.when === 'after' && !(await holdRequest(ctx, reply, fault))) return resetConnection(ctx, reply);
		return writeOut(ctx, reply, out);
	}
	// truncate and malformedJson transform a real response, so they always act "after".
	if (fault && (fault.when === 'after' || fault.kind === 'truncate' || fault.kind === 'malformedJson')) {
		return await sendWithFault(ctx, reply, out, fault);
	}
	writeOut(ctx, reply, out);
}

/**
 * Holds the request (a `hold` fault) until the control API releases it (true) or the client closes
 * the connection, the state is reset or the emulator closes (false).
 */
function holdRequest(ctx: Ctx, reply: FastifyReply, fault: Fault): Promise<boolean> {
	const res = reply.raw;
	return ctx.state.hold(ctx.entry, fault, ctx.runtime.abort.signal, (callback) => {
		if (res.destroyed || res.socket?.destroyed) return callback();
		res.once('close', callback);
	});
}

/** The `prompt` of a JSON request body, for faults aimed at one item of a batch. */
function promptOf(body: unknown): string | undefined {
	if (typeof body !== 'string' || !body.includes('"prompt"')) return undefined;
	const parsed = parseJson(body);
	const prompt = parsed.ok ? (parsed.value as { prompt?: unknown } | null)?.prompt : undefined;
	return typeof prompt === 'string' ? prompt : undefined;
}

/** The API's authentication: Bearer key → live key → scope → per-key rate limit. */
function authenticate(ctx: Ctx, req: FastifyRequest, scope: string): ApiKeyRecord {
	const header = req.headers.authorization;
	const match = /^Bearer\s+(\S+)\s*$/i.exec(typeof header === 'string' ? header : '');
	if (!match) throw new ApiError(401, 'unauthorized', MESSAGE_FOR_CODE.unauthorized);
	const key = ctx.state.keys.get(match[1]);
	if (!key || key.revoked || (key.expiresAt !== null && key.expiresAt <= ctx.state.now())) {
		throw new ApiError(401, 'invalid_api_key', MESSAGE_FOR_CODE.invalid_api_key);
	}
	ctx.entry.accountId = key.accountId;
	if (!key.scopes.includes(scope)) {
		throw new ApiError(403, 'insufficient_scope', `该 API 密钥缺少访问此接口所需的权限：${scope}。`);
	}
	const retryAfter = ctx.state.rateLimitRetryAfter(key.key);
	if (retryAfter !== null) {
		throw new ApiError(429, 'rate_limited', `请求过于频繁，请在 ${retryAfter} 秒后重试。`, undefined, {
			'retry-after': String(retryAfter),
		});
	}
	return key;
}

/** Parses an integer query parameter; absent → fallback, anything but a plain integer → 400. */
function intParam(query: Record<string, string>, name: string, fallback: number, min: number, max: number): number {
	const raw = query[name];
	if (raw === undefined) return fallback;
	const value = /^-?\d{1,16}$/.test(raw) ? Number(raw) : NaN;
	if (!Number.isSafeInteger(value) || value < min || value > max) {
		const range = min === Number.MIN_SAFE_INTEGER ? '整数' : `${min} 到 ${max} 之间的整数`;
		throw new ApiError(400, `invalid_${name}`, `${name} 无效：${JSON.stringify(raw)}，应为${range}。`, name);
	}
	return value;
}

function publicRecord(record: { id: number; pack_id: string; version: number; style_code: string; source_revision: number; published_at: number }) {
	return {
		id: record.id,
		pack_id: record.pack_id,
		version: record.version,
		style_code: record.style_code,
		source_revision: record.source_revision,
		published_at: record.published_at,
	};
}

/** The frozen manifest with download_url added to every image item (null when deleted by hand). */
export function servedManifest(state: EmulatorState, manifest: Readonly<Record<string, unknown>>) {
	const withUrls = (items: unknown) =>
		Array.isArray(items)
			? items.map((item: Record<string, unknown>) => {
					const image = typeof item.imageId === 'string' ? state.images.get(item.imageId) : undefined;
					return { ...item, download_url: state.isAvailable(image) ? `/api/file/${image.filename}` : null };
				})
			: items;
	const groups = (key: 'blocks' | 'slots') =>
		Array.isArray(manifest[key])
			? (manifest[key] as Array<Record<string, unknown>>).map((group) =>
					'items' in group ? { ...group, items: withUrls(group.items) } : { ...group },
				)
			: undefined;
	const out: Record<string, unknown> = { ...manifest };
	if (manifest.blocks) out.blocks = groups('blocks');
	if (manifest.slots) out.slots = groups('slots');
	return out;
}

export function servedPublication(state: EmulatorState, record: Parameters<typeof publicRecord>[0] & { manifest: Readonly<Record<string, unknown>> }) {
	return { ...publicRecord(record), manifest: servedManifest(state, record.manifest) };
}

function registerPublicRoutes(app: FastifyInstance, runtime: Runtime) {
	app.post('/api/v1/generate', { config: { routeName: 'generate' } }, (req, reply) =>
		handle('generate', req, reply, async (ctx) => {
			const key = authenticate(ctx, req, 'generate:write');
			const contentType = String(req.headers['content-type'] ?? '').toLowerCase();
			if (!contentType.startsWith('application/json')) {
				throw new ApiError(400, 'invalid_request', 'Content-Type 必须是 application/json。', 'content-type');
			}
			const parsed = parseJson(typeof req.body === 'string' ? req.body : '');
			if (!parsed.ok) throw new ApiError(400, 'invalid_request', '请求体不是合法的 JSON。', 'body');
			const body = parsed.value;
			const language = languageOf(req.headers['accept-language'] as string | undefined);
			const result = await generate({ state: ctx.state, key, body, language, signal: runtime.abort.signal });
			return jsonOut(200, result);
		}),
	);

	app.get('/api/v1/image-pack-publications', { config: { routeName: 'listPublications' } }, (req, reply) =>
		handle('listPublications', req, reply, async (ctx) => {
			const key = authenticate(ctx, req, 'documents:read');
			const query = ctx.entry.query;
			const sinceId = intParam(query, 'since_id', 0, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
			const limit = intParam(query, 'limit', 50, 1, 200);
			const items = ctx.state.listPublications(key.accountId, sinceId, limit);
			return jsonOut(200, {
				items: items.map(publicRecord),
				next_since_id: items.length ? items[items.length - 1].id : sinceId,
				reread_overlap: ctx.state.rereadOverlap,
				dedupe_by: ['pack_id', 'version'],
			});
		}),
	);

	app.get('/api/v1/image-pack-publications/:id', { config: { routeName: 'getPublication' } }, (req, reply) =>
		handle('getPublication', req, reply, async (ctx) => {
			const key = authenticate(ctx, req, 'documents:read');
			const raw = (req.params as { id: string }).id;
			if (!/^\d{1,16}$/.test(raw)) {
				throw new ApiError(400, 'invalid_id', `发布记录 id 必须是整数：${JSON.stringify(raw)}。`, 'id');
			}
			const record = ctx.state.visiblePublication(key.accountId, Number(raw));
			if (!record) throw new ApiError(404, 'not_found', `发布记录不存在：${raw}。`);
			return jsonOut(200, servedPublication(ctx.state, record));
		}),
	);

	app.get('/api/file/:filename', { config: { routeName: 'file' } }, (req, reply) =>
		handle('file', req, reply, async (ctx) => {
			const key = authenticate(ctx, req, 'assets:read');
			const filename = (req.params as { filename: string }).filename;
			const image = ctx.state.filesByAccount.get(key.accountId)?.get(filename);
			if (!ctx.state.isAvailable(image)) throw new ApiError(404, 'not_found', `文件不存在：${filename}。`);
			const expires = ctx.state.now() + SIGNED_LINK_TTL_MS;
			const signature = ctx.state.signFile(key.accountId, filename, expires);
			const location =
				`${runtime.fileBaseUrl}/signed/${encodeURIComponent(key.accountId)}/${encodeURIComponent(filename)}` +
				`?expires=${expires}&signature=${signature}`;
			return { status: 302, headers: { location, 'cache-control': 'no-store' }, body: Buffer.alloc(0) };
		}),
	);
}

function registerFileRoutes(app: FastifyInstance) {
	app.get('/signed/:accountId/:filename', { config: { routeName: 'signedFile' } }, (req, reply) =>
		handle('signedFile', req, reply, async (ctx) => {
			const { accountId, filename } = req.params as { accountId: string; filename: string };
			const query = ctx.entry.query;
			const expires = /^\d{1,16}$/.test(query.expires ?? '') ? Number(query.expires) : NaN;
			const expected = Buffer.from(ctx.state.signFile(accountId, filename, expires));
			const given = Buffer.from(query.signature ?? '');
			if (Number.isNaN(expires) || given.length !== expected.length || !timingSafeEqual(given, expected)) {
				throw new ApiError(403, 'invalid_signature', '下载链接签名无效。');
			}
			if (ctx.state.now() > expires) throw new ApiError(403, 'link_expired', '下载链接已过期，请重新请求文件地址。');
			const image = ctx.state.filesByAccount.get(accountId)?.get(filename);
			if (!ctx.state.isAvailable(image)) throw new ApiError(404, 'not_found', `文件不存在：${filename}。`);
			return {
				status: 200,
				headers: {
					'content-type': 'image/png',
					'cache-control': 'private, max-age=3600',
					'content-disposition': `inline; filename="${filename}"`,
				},
				body: renderPng(image.id, image.width, image.height, image.caption),
			};
		}),
	);
}

export function buildServer(runtime: Runtime, listener: 'api' | 'files'): FastifyInstance {
	const app = Fastify({ logger: false, forceCloseConnections: true });
	// Raw bodies: the generate handler decides what is valid JSON and answers in the API's error format.
	app.removeAllContentTypeParsers();
	app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));
	app.addHook('onRequest', async (req) => attachContext(runtime, listener, req));
	app.setNotFoundHandler((req, reply) => {
		const ctx = contexts.get(req);
		if (!ctx) return reply.code(404).send({ error: { code: 'not_found', message: 'unknown control route' } });
		return writeOut(ctx, reply, errorOut(new ApiError(404, 'not_found', `接口不存在：${req.method} ${ctx.entry.path}。`), ctx.requestId));
	});
	app.setErrorHandler((err, req, reply) => {
		const ctx = contexts.get(req);
		const apiError = toApiError(err);
		if (!ctx) return reply.code(apiError.status).send(errorBody(apiError, newRequestId()));
		return writeOut(ctx, reply, errorOut(apiError, ctx.requestId));
	});
	if (listener === 'api') registerPublicRoutes(app, runtime);
	else registerFileRoutes(app);
	return app;
}
