/**
 * POST /api/v1/generate: validation in a fixed, documented order (never silently defaulting), then
 * reservation, the (simulated) model call, and settlement — charge, partial refund or full refund.
 */
import { randomBytes } from 'crypto';
import { sleep } from 'n8n-workflow';

import {
	DEFAULT_PURPOSE,
	DEFAULT_RATIO,
	MAX_PROMPT_LENGTH,
	MAX_REFERENCE_LIMIT,
	MODELS,
	N_VALUES,
	PURPOSES,
	QUALITIES,
	RATIOS,
	REQUESTABLE_MODELS,
	RESOLUTIONS,
	chooseAutoModel,
	dimensions,
	matchesRatio,
	pricePerImage,
} from './catalog';
import type { ModelId, Quality, Ratio, RequestedModel, Resolution } from './catalog';
import { ApiError, SESSION_TITLE } from './errors';
import type { Language } from './errors';
import type { ApiKeyRecord, EmulatorState, TurnRecord, Warning } from './state';
import { NEW_ACCOUNT_DAILY_LIMIT } from './state';

const ALLOWED_FIELDS = new Set([
	'prompt',
	'ref_image_ids',
	'model',
	'ratio',
	'resolution',
	'quality',
	'n',
	'session_id',
	'purpose_id',
]);

const bad = (code: string, param: string, message: string) => new ApiError(400, code, message, param);

function oneOf<T extends string>(
	value: unknown,
	allowed: readonly T[],
	code: string,
	param: string,
	label: string,
): T | undefined {
	if (value === undefined) return undefined;
	if (typeof value !== 'string' || !allowed.includes(value as T)) {
		throw bad(code, param, `${label}无效：${JSON.stringify(value)}。可选值：${allowed.join('、')}。`);
	}
	return value as T;
}

interface ValidRequest {
	prompt: string | undefined;
	refs: string[];
	requestedModel: RequestedModel;
	model: ModelId;
	ratio: Ratio;
	resolution: Resolution;
	quality: Quality | undefined;
	n: number;
	sessionId: string | undefined;
	purposeId: string;
}

/** Validation steps 1–13 of the README, in order; throws the first failure. */
export function validateGenerate(state: EmulatorState, accountId: string, body: unknown): ValidRequest {
	// 1. A JSON object.
	if (typeof body !== 'object' || body === null || Array.isArray(body)) {
		throw bad('invalid_request', 'body', '请求体必须是 JSON 对象。');
	}
	const input = body as Record<string, unknown>;
	// 2. No unknown fields: a misspelt parameter must not silently fall back to its default.
	for (const field of Object.keys(input)) {
		if (!ALLOWED_FIELDS.has(field)) throw bad('invalid_request', field, `未知参数：${field}。`);
	}
	// 3. prompt / ref_image_ids types, presence and length.
	const { prompt, ref_image_ids: refsRaw } = input;
	if (prompt !== undefined && typeof prompt !== 'string') {
		throw bad('invalid_prompt', 'prompt', 'prompt 必须是字符串。');
	}
	if (
		refsRaw !== undefined &&
		(!Array.isArray(refsRaw) || refsRaw.some((id) => typeof id !== 'string' || id.length === 0))
	) {
		throw bad('invalid_ref_image_ids', 'ref_image_ids', 'ref_image_ids 必须是非空字符串组成的数组。');
	}
	const refs = (refsRaw as string[] | undefined) ?? [];
	const hasPrompt = typeof prompt === 'string' && prompt.trim().length > 0;
	if (!hasPrompt && refs.length === 0) {
		throw bad('invalid_request', 'prompt', 'prompt 与 ref_image_ids 至少需要提供一个。');
	}
	if (typeof prompt === 'string' && [...prompt].length > MAX_PROMPT_LENGTH) {
		throw bad('prompt_too_long', 'prompt', `prompt 最多 ${MAX_PROMPT_LENGTH} 个字符（当前 ${[...prompt].length} 个）。`);
	}
	// 4. model.
	const requestedModel =
		input.model === undefined
			? 'auto'
			: typeof input.model === 'string' && REQUESTABLE_MODELS.includes(input.model as RequestedModel)
				? (input.model as RequestedModel)
				: undefined;
	if (!requestedModel) {
		throw new ApiError(
			400,
			'invalid_model',
			`不支持的模型：${JSON.stringify(input.model)}。可选值：${REQUESTABLE_MODELS.join('、')}。`,
			'model',
		);
	}
	// 5. Values that are wrong for every model.
	const ratioIn = oneOf(input.ratio, RATIOS, 'invalid_ratio', 'ratio', '画面比例');
	const resolutionIn = oneOf(input.resolution, RESOLUTIONS, 'invalid_resolution', 'resolution', '分辨率');
	const quality = oneOf(input.quality, QUALITIES, 'invalid_quality', 'quality', '画质');
	if (input.n !== undefined && !N_VALUES.includes(input.n as number)) {
		throw bad('invalid_n', 'n', `n 无效：${JSON.stringify(input.n)}。可选值：1、2、4。`);
	}
	const n = (input.n as number | undefined) ?? 1;
	const purposeId = oneOf(input.purpose_id, PURPOSES, 'invalid_purpose_id', 'purpose_id', '用途') ?? DEFAULT_PURPOSE;
	if (input.session_id !== undefined && (typeof input.session_id !== 'string' || input.session_id === '')) {
		throw bad('invalid_session_id', 'session_id', 'session_id 必须是非空字符串。');
	}
	const ratio = ratioIn ?? DEFAULT_RATIO;
	// 6. Resolve `auto`; 7. the model's own ratio / resolution / reference limits.
	let model: ModelId;
	if (requestedModel === 'auto') {
		if (refs.length > MAX_REFERENCE_LIMIT) {
			throw bad(
				'too_many_references',
				'ref_image_ids',
				`参考图最多 ${MAX_REFERENCE_LIMIT} 张（当前 ${refs.length} 张）。`,
			);
		}
		const chosen = chooseAutoModel(hasPrompt ? (prompt as string) : undefined, refs.length, ratio, resolutionIn);
		if (!chosen) {
			throw bad('invalid_request', 'model', '没有可满足该比例、分辨率和参考图数量的模型。');
		}
		model = chosen;
	} else {
		model = requestedModel;
	}
	const spec = MODELS[model];
	if (!spec.ratios.includes(ratio)) {
		throw bad('invalid_ratio', 'ratio', `模型 ${model} 不支持比例 ${ratio}。可选值：${spec.ratios.join('、')}。`);
	}
	const resolution = resolutionIn ?? spec.defaultResolution;
	if (!spec.resolutions.includes(resolution)) {
		throw bad(
			'invalid_resolution',
			'resolution',
			`模型 ${model} 不支持分辨率 ${resolution}。可选值：${spec.resolutions.join('、')}。`,
		);
	}
	if (refs.length > spec.referenceLimit) {
		throw bad(
			'too_many_references',
			'ref_image_ids',
			`模型 ${model} 最多支持 ${spec.referenceLimit} 张参考图（当前 ${refs.length} 张）。`,
		);
	}
	// 8. Every reference must be a live image of this account; never skipped.
	for (const id of refs) {
		const image = state.images.get(id);
		if (!state.isAvailable(image) || image.accountId !== accountId) {
			throw new ApiError(400, 'reference_image_missing', `参考图不存在、已删除或已被清理：${id}。`, 'ref_image_ids');
		}
	}
	// 9. The session must exist and be the caller's.
	const sessionId = input.session_id as string | undefined;
	if (sessionId !== undefined) {
		const session = state.sessions.get(sessionId);
		if (!session || session.accountId !== accountId) {
			throw new ApiError(404, 'session_not_found', `会话不存在：${sessionId}。`, 'session_id');
		}
	}
	return {
		prompt: typeof prompt === 'string' ? prompt : undefined,
		refs,
		requestedModel,
		model,
		ratio,
		resolution,
		quality: spec.usesQuality ? quality : undefined,
		n,
		sessionId,
		purposeId,
	};
}

const TEXT = {
	n: {
		zh: (want: number, got: number) => `请求生成 ${want} 张，实际生成 ${got} 张；仅按 ${got} 张计费，差额已自动退回。`,
		en: (want: number, got: number) =>
			`Requested ${want} images, ${got} were produced; billed for ${got}, the difference was refunded.`,
	},
	ratio: {
		zh: (want: string, w: number, h: number) => `上游模型未按请求比例 ${want} 出图，实际尺寸 ${w}×${h}，已原样交付。`,
		en: (want: string, w: number, h: number) =>
			`The upstream model did not produce the requested ratio ${want}; the image is ${w}x${h} and was delivered untouched.`,
	},
	resolution: {
		zh: (want: string, got: string) => `上游模型暂不支持以 ${want} 出图，已降级为 ${got}。`,
		en: (want: string, got: string) => `The upstream model could not render at ${want}; it was downgraded to ${got}.`,
	},
	generic: {
		zh: (feature: string) => `上游模型对「${feature}」的支持受限。`,
		en: (feature: string) => `The upstream model has limited support for "${feature}".`,
	},
};

export interface GenerateContext {
	state: EmulatorState;
	key: ApiKeyRecord;
	body: unknown;
	language: Language;
	signal: AbortSignal;
}

export async function generate(ctx: GenerateContext): Promise<Record<string, unknown>> {
	const { state, key, language } = ctx;
	const account = state.account(key.accountId);
	const req = validateGenerate(state, account.id, ctx.body);

	// 10–11. Price, balance, new-account daily limit; reserve only when both pass.
	const unit = pricePerImage(req.model, req.resolution, req.quality, req.refs.length);
	const estimate = unit * req.n;
	if (account.credits < estimate) {
		throw new ApiError(
			402,
			'insufficient_credits',
			`积分不足：本次生成需要 ${estimate} 积分，当前余额 ${account.credits} 积分。请在网站「账户 → 积分充值」页面充值后重试。`,
		);
	}
	if (state.isNewAccount(account)) {
		const spent = state.spentLast24h(account);
		if (spent + estimate > NEW_ACCOUNT_DAILY_LIMIT) {
			throw new ApiError(
				429,
				'new_user_daily_limit',
				`注册未满 7 天的账户 24 小时内最多消耗 ${NEW_ACCOUNT_DAILY_LIMIT} 积分：已消耗 ${spent} 积分，本次需要 ${estimate} 积分。`,
			);
		}
	}

	const session = req.sessionId
		? state.sessions.get(req.sessionId)!
		: state.createSession(account.id, SESSION_TITLE[language]);
	const turn: TurnRecord = {
		id: `t_${randomBytes(8).toString('hex')}`,
		accountId: account.id,
		sessionId: session.id,
		requestedModel: req.requestedModel,
		model: req.model,
		ratio: req.ratio,
		resolution: req.resolution,
		quality: req.quality ?? null,
		n: req.n,
		purposeId: req.purposeId,
		prompt: req.prompt ?? null,
		refImageIds: req.refs,
		pricePerImage: unit,
		reserved: estimate,
		charged: 0,
		delivered: 0,
		status: 'running',
		imageIds: [],
		warnings: [],
		createdAt: state.now(),
		durationMs: null,
	};
	state.turns.set(turn.id, turn);
	session.turnIds.push(turn.id);
	state.ledger(account, 'reserve', estimate, turn.id);

	// The "model call": latency and scripted outcomes are the test's levers.
	const started = Date.now();
	const behaviour = state.takeBehaviour(req.prompt);
	const extraMs = state.latencyFor('generate') + (behaviour?.durationMs ?? 0);
	await sleep(Math.max(1, extraMs), ctx.signal);
	turn.durationMs = Date.now() - started;

	const delivered = behaviour?.fail ? 0 : Math.max(0, Math.min(req.n, behaviour?.deliver ?? req.n));
	if (delivered === 0) {
		turn.status = 'failed';
		state.ledger(account, 'refund', estimate, turn.id);
		throw new ApiError(500, 'internal_error', '图片生成失败，本次预扣的积分已全部退回。请稍后重试。');
	}

	const actualRatio = behaviour?.downgrade?.ratio ?? req.ratio;
	const actualResolution = behaviour?.downgrade?.resolution ?? req.resolution;
	const { width, height } = dimensions(actualRatio, actualResolution);
	const warnings: Warning[] = [];
	if (delivered < req.n) {
		warnings.push({ type: 'downgraded', feature: 'n', details: TEXT.n[language](req.n, delivered) });
	}
	if (!matchesRatio(width, height, req.ratio)) {
		warnings.push({ type: 'downgraded', feature: 'ratio', details: TEXT.ratio[language](req.ratio, width, height) });
	}
	if (actualResolution !== req.resolution) {
		warnings.push({
			type: 'downgraded',
			feature: 'resolution',
			details: TEXT.resolution[language](req.resolution, actualResolution),
		});
	}
	for (const w of behaviour?.warnings ?? []) {
		warnings.push({ type: w.type, feature: w.feature, details: w.details ?? TEXT.generic[language](w.feature) });
	}

	const caption = { model: req.model, prompt: req.prompt ?? '' };
	const images = Array.from({ length: delivered }, () => state.addImage(account.id, width, height, turn.id, undefined, caption));
	const charged = unit * delivered;
	state.ledger(account, 'charge', charged, turn.id);
	if (charged < estimate) state.ledger(account, 'refund', estimate - charged, turn.id);
	turn.charged = charged;
	turn.delivered = delivered;
	turn.status = delivered < req.n ? 'partial' : 'succeeded';
	turn.imageIds = images.map((i) => i.id);
	turn.warnings = warnings;

	return {
		ok: true,
		turn_id: turn.id,
		session_id: session.id,
		credits_charged: charged,
		duration_ms: turn.durationMs,
		warnings,
		images: images.map((image) => ({
			id: image.id,
			filename: image.filename,
			url: `/api/file/${image.filename}`,
			width: image.width,
			height: image.height,
		})),
	};
}
