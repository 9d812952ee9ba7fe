/**
 * The control API (a test facility, no API key): scripting accounts, keys, publications, images,
 * latency, faults, generation outcomes, rate limits and the clock, and reading logs and ledgers.
 * Mounted under /_emulator on the public listener; these calls never enter the public request log.
 */
import { randomBytes } from 'crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';

import { RATIOS, RESOLUTIONS, dimensions } from './catalog';
import type { Ratio, Resolution } from './catalog';
import { ApiError, errorBody, parseJson } from './errors';
import { renderPng } from './png';
import type { EmulatorState, FaultSpec, GenerationBehaviour, ImageRecord } from './state';
import { DAY_MS, ROUTE_NAMES, SCHEMA_V3_FROM, sha256 } from './state';
import { CONTROL_PREFIX, servedPublication } from './server';
import type { Runtime } from './server';

const ratio = z.enum(RATIOS as [Ratio, ...Ratio[]]);
const resolution = z.enum(RESOLUTIONS as [Resolution, ...Resolution[]]);
const route = z.enum(['*', ...ROUTE_NAMES]);
const item = z.object({ imageId: z.string().min(1).optional() }).passthrough();
const group = z.object({ items: z.array(item).optional() }).passthrough();

const schemas = {
	account: z.object({
		accountId: z.string().min(1).optional(),
		credits: z.number().int().optional(),
		ageDays: z.number().min(0).optional(),
	}),
	accountPatch: z.object({ credits: z.number().int().optional(), ageDays: z.number().min(0).optional() }),
	key: z.object({
		accountId: z.string().optional(),
		scopes: z.array(z.string()).optional(),
		expiresAt: z.number().int().nullable().optional(),
		name: z.string().optional(),
		key: z.string().startsWith('sk_').optional(),
	}),
	revoke: z.object({ key: z.string() }),
	publish: z.object({
		accountId: z.string().optional(),
		packId: z.string().min(1).optional(),
		schemaVersion: z.union([z.literal(2), z.literal(3)]).optional(),
		manifest: z
			.object({ schemaVersion: z.number().optional(), blocks: z.array(group).optional(), slots: z.array(group).optional() })
			.passthrough()
			.optional(),
		blocks: z.array(group).optional(),
		slots: z.array(group).optional(),
		styleCode: z.string().optional(),
		sourceRevision: z.number().int().optional(),
		publishedAt: z.number().int().optional(),
		commit: z.boolean().optional(),
	}),
	repeat: z.object({ commit: z.boolean().optional() }),
	bulk: z.object({
		accountId: z.string().optional(),
		count: z.number().int().min(1).max(1_000_000),
		packs: z.number().int().min(1).optional(),
		schemaVersion: z.union([z.literal(2), z.literal(3)]).optional(),
		publishedAt: z.number().int().optional(),
		stepMs: z.number().int().min(0).optional(),
		images: z.number().int().min(0).max(1000).optional(),
		noteChars: z.number().int().min(0).max(32 * 1024 * 1024).optional(),
	}),
	seed: z.object({
		accountId: z.string().optional(),
		count: z.number().int().min(1).max(1000).optional(),
		ratio: ratio.optional(),
		resolution: resolution.optional(),
		ids: z.array(z.string().min(1)).optional(),
	}),
	image: z.object({ accountId: z.string().optional(), image: z.string().min(1) }),
	latency: z.object({ route, ms: z.number().min(0) }),
	fault: z.object({
		route,
		kind: z.enum(['status', 'reset', 'slow', 'truncate', 'malformedJson', 'html', 'hold']),
		count: z.number().int().min(1).optional(),
		skip: z.number().int().min(0).optional(),
		status: z.number().int().min(100).max(599).optional(),
		code: z.string().optional(),
		message: z.string().optional(),
		retryAfter: z.number().min(0).optional(),
		delayMs: z.number().min(0).optional(),
		when: z.enum(['before', 'after']).optional(),
		withRequestId: z.boolean().optional(),
		promptIncludes: z.string().optional(),
	}),
	behaviour: z.object({
		deliver: z.number().int().min(0).optional(),
		fail: z.boolean().optional(),
		downgrade: z.object({ ratio: ratio.optional(), resolution: resolution.optional() }).optional(),
		warnings: z
			.array(z.object({ type: z.enum(['unsupported', 'downgraded']), feature: z.string(), details: z.string().optional() }))
			.optional(),
		durationMs: z.number().min(0).optional(),
		count: z.number().int().min(1).optional(),
		persist: z.boolean().optional(),
		promptIncludes: z.string().optional(),
	}),
	release: z.object({ seq: z.number().int().min(1).optional() }),
	rateLimit: z.object({ perKeyPerMinute: z.number().int().min(1).nullable() }),
	overlap: z.object({ overlap: z.number().int().min(0) }),
	clock: z.object({ epochMs: z.number() }),
	advance: z.object({ ms: z.number() }),
};

function parse<T>(schema: z.ZodType<T>, body: unknown): T {
	let value = body;
	if (typeof body === 'string') {
		const parsed = body.trim() === '' ? { ok: true as const, value: {} } : parseJson(body);
		if (!parsed.ok) throw new ApiError(400, 'invalid_request', 'control API body is not valid JSON');
		value = parsed.value;
	}
	const result = schema.safeParse(value ?? {});
	if (!result.success) {
		throw new ApiError(
			400,
			'invalid_request',
			result.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '),
		);
	}
	return result.data;
}

function imageView(image: ImageRecord) {
	return {
		id: image.id,
		accountId: image.accountId,
		filename: image.filename,
		url: `/api/file/${image.filename}`,
		width: image.width,
		height: image.height,
		turnId: image.turnId,
		createdAt: image.createdAt,
		deleted: image.deleted,
		cleaned: image.cleaned,
		published: image.published,
		sha256: sha256(renderPng(image.id, image.width, image.height, image.caption)),
	};
}

const deepFreeze = <T>(value: T): T => {
	if (value && typeof value === 'object') {
		Object.values(value).forEach(deepFreeze);
		Object.freeze(value);
	}
	return value;
};

type Group = Record<string, unknown> & { items?: Array<Record<string, unknown>> };

/** Ensures every item's image exists in the account (seeding unknown or missing ids), marks it published. */
function normaliseGroups(state: EmulatorState, accountId: string, groups: Group[]): Group[] {
	const { width, height } = dimensions('3:4', '1K');
	return groups.map((g) => {
		if (!Array.isArray(g.items)) return { ...g };
		const items = g.items.map((raw) => {
			const { download_url: _ignored, ...rest } = raw;
			void _ignored;
			let image = typeof rest.imageId === 'string' ? state.images.get(rest.imageId) : undefined;
			if (image && image.accountId !== accountId) {
				throw new ApiError(400, 'invalid_request', `image ${image.id} belongs to another account`);
			}
			if (!image) image = state.addImage(accountId, width, height, null, rest.imageId as string | undefined);
			image.published = true;
			return { ...rest, imageId: image.id };
		});
		return { ...g, items };
	});
}

const blockId = () => `blk_${randomBytes(4).toString('hex')}`;

const NOTES = [
	'这是一组商品主图：第一张用作首图，其余用于详情页。请勿裁切商品主体。 Hero shots: the first one is the listing image, the others go on the product page. Do not crop the product.',
	'细节图，按顺序使用，保留白色背景。 Detail shots, to be used in this order; keep the white background.',
	'买家秀风格，可用于社交媒体。 Buyer-show style, fine for social media.',
];

/**
 * A seller's manifest of `images` images in groups of up to 10, each group after a note in Chinese
 * and English; `noteChars` pads the first note to that many characters (a long document).
 */
function sizedGroups(images: number, noteChars = 0): Group[] {
	const groups: Group[] = [];
	for (let at = 0, group = 0; at < Math.max(images, 1); at += 10, group++) {
		const note = NOTES[group % NOTES.length];
		const content = group === 0 && noteChars > note.length ? note.padEnd(noteChars, ' 注意') : note;
		groups.push({ id: blockId(), type: 'text', content });
		const count = Math.min(10, images - at);
		if (count > 0) groups.push({ id: blockId(), type: 'images', items: Array.from({ length: count }, () => ({})) });
	}
	return groups;
}

function defaultGroups(schemaVersion: 2 | 3): Group[] {
	if (schemaVersion === 3) {
		return [
			{
				id: blockId(),
				type: 'text',
				content: '这是一组商品主图：第一张用作首图，其余用于详情页。请勿裁切商品主体。',
			},
			{ id: blockId(), type: 'images', items: [{}, {}, {}] },
		];
	}
	return [
		{ slotId: 'main', name: '主图', note: '白底主图，用于商品首图。', items: [{}] },
		{ slotId: 'detail', name: '详情图', note: '详情页配图，按顺序使用。', items: [{}, {}] },
	];
}

/** Builds and freezes the manifest of a publication (schemaVersion from the body, or from publishedAt). */
function buildPublication(state: EmulatorState, body: z.infer<typeof schemas.publish>, accountId: string) {
	const explicit = body.schemaVersion ?? (body.manifest?.schemaVersion as 2 | 3 | undefined);
	if (explicit !== undefined && explicit !== 2 && explicit !== 3) {
		throw new ApiError(400, 'invalid_request', 'schemaVersion must be 2 or 3');
	}
	const schemaVersion: 2 | 3 =
		explicit ?? (body.publishedAt !== undefined && body.publishedAt < SCHEMA_V3_FROM ? 2 : 3);
	const publishedAt =
		body.publishedAt ?? (schemaVersion === 2 ? Math.min(state.now(), SCHEMA_V3_FROM - 30 * DAY_MS) : state.now());
	if ((schemaVersion === 2) !== publishedAt < SCHEMA_V3_FROM) {
		throw new ApiError(
			400,
			'invalid_request',
			`schemaVersion ${schemaVersion} contradicts publishedAt ${new Date(publishedAt).toISOString()} (v2 is for records before 2026-09-10)`,
		);
	}
	const key = schemaVersion === 3 ? 'blocks' : 'slots';
	const given = (schemaVersion === 3 ? body.blocks : body.slots) ?? (body.manifest?.[key] as Group[] | undefined);
	// Other top-level manifest fields are kept verbatim (the snapshot is "untouched").
	const otherFields = Object.fromEntries(
		Object.entries(body.manifest ?? {}).filter(([name]) => !['blocks', 'slots', 'schemaVersion'].includes(name)),
	);
	const manifest = deepFreeze({
		schemaVersion,
		...otherFields,
		[key]: normaliseGroups(state, accountId, (given as Group[] | undefined) ?? defaultGroups(schemaVersion)),
	});
	return { manifest, publishedAt };
}

function controlView(state: EmulatorState, id: number) {
	const record = state.publications.get(id)!;
	return { ...servedPublication(state, record), accountId: record.accountId, committed: record.committed };
}

export function registerControlRoutes(app: FastifyInstance, runtime: Runtime, reset: () => EmulatorState, info: () => unknown) {
	const p = CONTROL_PREFIX;
	const s = () => runtime.state;
	type Handler = (req: FastifyRequest) => unknown;
	const wrap = (handler: Handler) => async (req: FastifyRequest, reply: FastifyReply) => {
		try {
			const result = await handler(req);
			return reply.code(200).send(result ?? { ok: true });
		} catch (err) {
			const apiError = err instanceof ApiError ? err : new ApiError(500, 'internal_error', String(err));
			return reply.code(apiError.status).send(errorBody(apiError, 'req_control'));
		}
	};
	const query = (req: FastifyRequest) => req.query as Record<string, string | undefined>;
	const accountOf = (req: FastifyRequest) => s().account(query(req).accountId);

	app.post(`${p}/reset`, wrap(() => (s().dropHeld(), reset(), info())));
	app.get(`${p}/info`, wrap(() => info()));

	app.post(`${p}/accounts`, wrap((req) => s().accountView(s().createAccount(parse(schemas.account, req.body)))));
	app.get(`${p}/accounts/:accountId`, wrap((req) => s().accountView(s().account((req.params as { accountId: string }).accountId))));
	app.patch(
		`${p}/accounts/:accountId`,
		wrap((req) => {
			const body = parse(schemas.accountPatch, req.body);
			const account = s().account((req.params as { accountId: string }).accountId);
			if (body.credits !== undefined) s().setCredits(account, body.credits);
			if (body.ageDays !== undefined) account.createdAt = s().now() - body.ageDays * DAY_MS;
			return s().accountView(account);
		}),
	);

	app.post(`${p}/keys`, wrap((req) => s().createKey(parse(schemas.key, req.body))));
	app.post(
		`${p}/keys/revoke`,
		wrap((req) => {
			const { key } = parse(schemas.revoke, req.body);
			s().revokeKey(key);
			return s().keys.get(key);
		}),
	);
	app.get(`${p}/keys`, wrap((req) => [...s().keys.values()].filter((k) => !query(req).accountId || k.accountId === query(req).accountId)));

	app.post(
		`${p}/publications`,
		wrap((req) => {
			const body = parse(schemas.publish, req.body);
			const state = s();
			const account = state.account(body.accountId);
			const pack = state.pack(account.id, body.packId);
			const { manifest, publishedAt } = buildPublication(state, body, account.id);
			const record = state.allocatePublication(
				account.id,
				pack,
				manifest,
				{ styleCode: body.styleCode, sourceRevision: body.sourceRevision, publishedAt },
				body.commit ?? true,
			);
			return controlView(state, record.id);
		}),
	);
	app.post(
		`${p}/publications/bulk`,
		wrap((req) => {
			const body = parse(schemas.bulk, req.body);
			const state = s();
			const account = state.account(body.accountId);
			// One shared frozen manifest keeps 100k records cheap.
			const sized = body.images !== undefined || body.noteChars !== undefined;
			if (sized && body.schemaVersion === 2) throw new ApiError(400, 'invalid_request', 'images and noteChars make schemaVersion 3 manifests');
			const { manifest, publishedAt } = buildPublication(
				state,
				{
					schemaVersion: body.schemaVersion,
					publishedAt: body.publishedAt,
					blocks: sized ? sizedGroups(body.images ?? 3, body.noteChars) : undefined,
				},
				account.id,
			);
			const packCount = Math.min(body.packs ?? body.count, body.count);
			const packs = Array.from({ length: packCount }, () => state.pack(account.id, undefined));
			const step = body.stepMs ?? 0;
			let firstId = 0;
			let lastId = 0;
			for (let i = 0; i < body.count; i++) {
				const record = state.allocatePublication(
					account.id,
					packs[i % packCount],
					manifest,
					{ publishedAt: publishedAt + i * step },
					true,
				);
				if (i === 0) firstId = record.id;
				lastId = record.id;
			}
			return { firstId, lastId, count: body.count, packIds: packCount <= 100 ? packs.map((pk) => pk.id) : undefined };
		}),
	);
	app.post(
		`${p}/publications/:id/repeat`,
		wrap((req) => {
			const id = Number((req.params as { id: string }).id);
			const { commit } = parse(schemas.repeat, req.body ?? {});
			return controlView(s(), s().repeatPublication(id, commit ?? true).id);
		}),
	);
	app.post(
		`${p}/publications/:id/commit`,
		wrap((req) => {
			const id = Number((req.params as { id: string }).id);
			s().commit(id);
			return controlView(s(), id);
		}),
	);
	app.get(
		`${p}/publications/:id`,
		wrap((req) => {
			const id = Number((req.params as { id: string }).id);
			if (!s().publications.has(id)) throw new ApiError(404, 'not_found', `no publication ${id}`);
			return controlView(s(), id);
		}),
	);

	app.post(
		`${p}/images`,
		wrap((req) => {
			const body = parse(schemas.seed, req.body);
			const state = s();
			const account = state.account(body.accountId);
			const { width, height } = dimensions(body.ratio ?? '1:1', body.resolution ?? '1K');
			const ids = body.ids ?? Array.from({ length: body.count ?? 1 }, () => undefined);
			return { images: ids.map((id) => imageView(state.addImage(account.id, width, height, null, id))) };
		}),
	);
	app.get(
		`${p}/images`,
		wrap((req) => {
			const accountId = query(req).accountId;
			return [...s().images.values()].filter((i) => !accountId || i.accountId === accountId).map(imageView);
		}),
	);
	app.post(
		`${p}/images/delete`,
		wrap((req) => {
			const body = parse(schemas.image, req.body);
			const image = s().findImage(s().account(body.accountId).id, body.image);
			image.deleted = true; // by hand: allowed even for published images
			return imageView(image);
		}),
	);
	app.post(
		`${p}/images/clean`,
		wrap((req) => {
			const body = parse(schemas.image, req.body);
			const image = s().findImage(s().account(body.accountId).id, body.image);
			// The API's rule: images referenced by a published version are never auto-cleaned.
			if (!image.published) image.cleaned = true;
			return { ...imageView(image), protected: image.published };
		}),
	);

	app.put(
		`${p}/latency`,
		wrap((req) => {
			const body = parse(schemas.latency, req.body);
			if (body.ms === 0) s().latency.delete(body.route as never);
			else s().latency.set(body.route as never, body.ms);
			return Object.fromEntries(s().latency);
		}),
	);
	app.get(`${p}/latency`, wrap(() => Object.fromEntries(s().latency)));

	app.post(
		`${p}/faults`,
		wrap((req) => {
			const fault = s().addFault(parse(schemas.fault, req.body) as FaultSpec);
			return { id: fault.id, route: fault.route, kind: fault.kind, when: fault.when, remaining: fault.remaining };
		}),
	);
	app.get(`${p}/faults`, wrap(() => s().faults.map((f) => ({ id: f.id, ...f.spec, when: f.when, remaining: f.remaining, skip: f.skip }))));
	app.delete(`${p}/faults`, wrap(() => void s().faults.splice(0)));
	app.get(`${p}/held`, wrap(() => s().held()));
	app.post(`${p}/held/release`, wrap((req) => s().release(parse(schemas.release, req.body ?? {}).seq)));

	app.put(
		`${p}/generation-behaviour`,
		wrap((req) => {
			const body = parse(schemas.behaviour, req.body) as GenerationBehaviour;
			s().behaviour = { ...body, remaining: body.count ?? 1 };
			return s().behaviour;
		}),
	);
	app.delete(`${p}/generation-behaviour`, wrap(() => void (s().behaviour = null)));

	app.put(
		`${p}/reread-overlap`,
		wrap((req) => {
			s().rereadOverlap = parse(schemas.overlap, req.body).overlap;
			return { overlap: s().rereadOverlap };
		}),
	);

	app.put(
		`${p}/rate-limit`,
		wrap((req) => {
			s().rateLimit = parse(schemas.rateLimit, req.body);
			return s().rateLimit;
		}),
	);

	const clockView = () => ({ now: s().now(), offsetMs: s().clockOffsetMs });
	app.get(`${p}/clock`, wrap(clockView));
	app.put(
		`${p}/clock`,
		wrap((req) => {
			s().clockOffsetMs = parse(schemas.clock, req.body).epochMs - Date.now();
			return clockView();
		}),
	);
	app.post(
		`${p}/clock/advance`,
		wrap((req) => {
			s().clockOffsetMs += parse(schemas.advance, req.body).ms;
			return clockView();
		}),
	);

	app.get(
		`${p}/requests`,
		wrap((req) => {
			const q = query(req);
			return s().requestLog.filter(
				(e) => (!q.route || e.route === q.route) && (!q.listener || e.listener === q.listener),
			);
		}),
	);
	app.delete(`${p}/requests`, wrap(() => void s().requestLog.splice(0)));

	app.get(
		`${p}/ledger`,
		wrap((req) => {
			const account = accountOf(req);
			return { accountId: account.id, balance: account.credits, entries: s().ledgers.get(account.id) };
		}),
	);
	app.get(`${p}/turns`, wrap((req) => [...s().turns.values()].filter((t) => t.accountId === accountOf(req).id)));
	app.get(`${p}/sessions`, wrap((req) => [...s().sessions.values()].filter((x) => x.accountId === accountOf(req).id)));
}
