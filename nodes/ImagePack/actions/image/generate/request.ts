/**
 * Checks a Generate request against the catalog before anything is sent, and builds the API body
 * with its credit estimate; Max Credits per Item is checked here, against that estimate, since it
 * caps one request and needs no reservation (credits.ts holds the caps that do). Pure: no n8n, no
 * HTTP. Every failure names the parameter and the allowed values.
 */
import {
	AUTO_MODEL,
	type ImageCount,
	IMAGE_COUNTS,
	MAX_PROMPT_LENGTH,
	MAX_REFERENCES,
	MODEL_IDS,
	PURPOSES,
	type Purpose,
	type Quality,
	QUALITIES,
	type Ratio,
	RATIOS,
	type Resolution,
	RESOLUTIONS,
	autoCandidates,
	estimateCredits,
	findModel,
} from '../../../shared/catalog';
import { ValidationIssue } from '../../../shared/parameters';

export interface GenerateParameters {
	prompt: unknown;
	referenceImageIds: unknown;
	model: string;
	ratio: string;
	resolution: string;
	quality?: string;
	n: number | string;
	purpose: string;
	sessionId: string;
	/** Max Credits per Item, already bounded; 0 for none. */
	maxCreditsPerItem?: number;
}

export interface GenerateBody {
	prompt?: string;
	ref_image_ids?: string[];
	model: string;
	ratio: Ratio;
	resolution?: Resolution;
	quality?: Quality;
	n: ImageCount;
	purpose_id: Purpose;
	session_id?: string;
}

export interface ValidatedGenerate {
	body: GenerateBody;
	/** Credits the service will reserve (for `auto`: the highest price among the models it may pick). */
	creditsEstimated: number;
}

/** How deep a reference list may nest (lists of lists, objects with ids). */
const MAX_REFERENCE_NESTING = 8;

/** C0 control characters other than tab and line breaks, and DEL: never meant for a prompt. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_CHARACTER = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/;

/**
 * Reference image ids from whatever the user wired in: a comma/space separated string, an array of
 * ids, or the `images` array of an earlier Generate (objects with `id`), nested or not.
 */
export function parseReferenceImageIds(value: unknown): string[] {
	const ids: string[] = [];
	// Depth-first without recursion, so a list nested 20,000 deep is a clear error, not a stack
	// overflow; a real list of references is at most a few levels deep.
	const pending: Array<{ entry: unknown; depth: number }> = [{ entry: value, depth: 0 }];
	while (pending.length) {
		const { entry, depth } = pending.pop()!;
		if (entry === null || entry === undefined || entry === '') continue;
		if (depth > MAX_REFERENCE_NESTING) {
			throw new ValidationIssue(
				'referenceImageIds',
				`Reference Image IDs are nested more than ${MAX_REFERENCE_NESTING} levels deep. Allowed values: image ids (img_...), a list of them, or the "images" of an earlier Generate`,
			);
		}
		if (Array.isArray(entry)) {
			for (let index = entry.length - 1; index >= 0; index--) {
				pending.push({ entry: entry[index] as unknown, depth: depth + 1 });
			}
			continue;
		}
		if (typeof entry === 'object') {
			const object = entry as { id?: unknown; imageId?: unknown };
			const id = object.id ?? object.imageId;
			if (id === undefined) {
				throw new ValidationIssue(
					'referenceImageIds',
					'Reference Image IDs must be image ids (img_...) or objects with an "id", such as the "images" of an earlier Generate',
				);
			}
			pending.push({ entry: id, depth: depth + 1 });
			continue;
		}
		const text = String(entry).trim();
		if (text.startsWith('[')) {
			try {
				pending.push({ entry: JSON.parse(text) as unknown, depth: depth + 1 });
				continue;
			} catch {
				// Not JSON after all: fall through to splitting.
			}
		}
		ids.push(...text.split(/[\s,;]+/).filter(Boolean));
	}
	const malformed = ids.find((id) => !/^img_[A-Za-z0-9_-]+$/.test(id));
	if (malformed) {
		throw new ValidationIssue(
			'referenceImageIds',
			`"${malformed.slice(0, 80)}" is not an image id. Use the images[].id values of an earlier Generate (they start with img_)`,
		);
	}
	return ids;
}

function oneOf<T extends string | number>(
	parameter: string,
	label: string,
	value: unknown,
	allowed: readonly T[],
	context = '',
): T {
	const match = allowed.find((candidate) => String(candidate) === String(value).trim());
	if (match === undefined) {
		throw new ValidationIssue(
			parameter,
			`${label} "${String(value)}" is not allowed${context}. Allowed values: ${allowed.join(', ')}`,
		);
	}
	return match;
}

/** The prompt as text; an expression may hand over a number, never an object or control bytes. */
function promptText(value: unknown): string {
	if (value === undefined || value === null) return '';
	if (typeof value !== 'string' && typeof value !== 'number') {
		throw new ValidationIssue(
			'prompt',
			`Prompt must be text, but the expression gave ${Array.isArray(value) ? 'a list' : `a ${typeof value}`}. Allowed values: text up to ${MAX_PROMPT_LENGTH} characters`,
		);
	}
	const prompt = String(value).trim();
	const control = CONTROL_CHARACTER.exec(prompt);
	if (control) {
		const code = control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0');
		throw new ValidationIssue(
			'prompt',
			`Prompt contains the control character U+${code}, which is never part of a prompt. Allowed values: text (tabs and line breaks are fine)`,
		);
	}
	return prompt;
}

/** The prompt and the references: at least one of them, within the prompt's length. */
function checkedContent(parameters: GenerateParameters) {
	const prompt = promptText(parameters.prompt);
	const promptLength = [...prompt].length;
	const references = parseReferenceImageIds(parameters.referenceImageIds);
	if (!prompt && references.length === 0) {
		throw new ValidationIssue(
			'prompt',
			'Prompt is empty and no Reference Image IDs are given: provide a prompt, reference images, or both',
		);
	}
	if (promptLength > MAX_PROMPT_LENGTH) {
		throw new ValidationIssue(
			'prompt',
			`Prompt has ${promptLength} characters; the maximum is ${MAX_PROMPT_LENGTH}`,
		);
	}
	return { prompt, references };
}

/** Model, ratio, resolution, count, purpose and quality, each against what the model offers (catalog.ts). */
function checkedChoices(parameters: GenerateParameters, referenceCount: number) {
	const modelId = oneOf('model', 'Model', parameters.model || AUTO_MODEL, MODEL_IDS);
	const model = findModel(modelId);
	const on = model ? ` for ${model.id}` : '';
	const ratio = oneOf('ratio', 'Ratio', parameters.ratio, model?.ratios ?? RATIOS, on);
	const resolutions = model?.resolutions ?? RESOLUTIONS;
	const resolution = parameters.resolution
		? oneOf('resolution', 'Resolution', parameters.resolution, resolutions, on)
		: undefined;
	const n = oneOf('n', 'Number of images', parameters.n, IMAGE_COUNTS);
	const purpose = oneOf('purpose', 'Purpose', parameters.purpose || 'free', PURPOSES);
	const quality =
		model?.usesQuality && parameters.quality
			? oneOf('quality', 'Quality', parameters.quality, QUALITIES, on)
			: undefined;
	const referenceLimit = model?.referenceLimit ?? MAX_REFERENCES;
	if (referenceCount > referenceLimit) {
		throw new ValidationIssue(
			'referenceImageIds',
			`${referenceCount} reference images given; ${model ? model.id : 'every model'} accepts at most ${referenceLimit}`,
		);
	}
	const query = { resolution: resolution ?? ('' as const), quality, referenceCount };
	if (!model && autoCandidates(ratio, query).length === 0) {
		throw new ValidationIssue(
			'resolution',
			`No model can serve ratio ${ratio} at ${resolution ?? 'the default resolution'} with ${referenceCount} reference images`,
		);
	}
	const creditsEstimated = estimateCredits(modelId, ratio, query, n) ?? 0;
	return { modelId, ratio, resolution, n, purpose, quality, creditsEstimated };
}

/** Validates one item's Generate parameters; throws a ValidationIssue naming the parameter. */
export function validateGenerate(parameters: GenerateParameters): ValidatedGenerate {
	const { prompt, references } = checkedContent(parameters);
	const choice = checkedChoices(parameters, references.length);
	const budget = parameters.maxCreditsPerItem ?? 0;
	if (budget > 0 && choice.creditsEstimated > budget) {
		throw new ValidationIssue(
			'maxCreditsPerItem',
			`This request would reserve ${choice.creditsEstimated} credits, more than Max Credits per Item (${budget})`,
		);
	}
	const sessionId = String(parameters.sessionId ?? '').trim();
	if (sessionId && !/^s_[A-Za-z0-9_-]+$/.test(sessionId)) {
		throw new ValidationIssue(
			'sessionId',
			`"${sessionId}" is not a session id (they look like s_...)`,
		);
	}
	const { modelId, ratio, resolution, n, purpose, quality } = choice;
	const body: GenerateBody = { model: modelId, ratio, n, purpose_id: purpose };
	if (prompt) body.prompt = prompt;
	if (references.length) body.ref_image_ids = references;
	if (resolution) body.resolution = resolution;
	if (quality) body.quality = quality;
	if (sessionId) body.session_id = sessionId;
	return { body, creditsEstimated: choice.creditsEstimated };
}
