/**
 * Reading a parameter's value against its own definition, shared by the operations and the trigger:
 * a bad value is a ValidationIssue naming the parameter and the allowed values. Pure.
 */
import type { INodeProperties } from 'n8n-workflow';

/** A parameter value that is not allowed: `parameter` names it, the message says what is. */
export class ValidationIssue extends Error {
	constructor(
		readonly parameter: string,
		message: string,
	) {
		super(message);
	}
}

/** What `boundedNumber` reads of a number parameter's definition. */
type NumberProperty = Pick<INodeProperties, 'name' | 'displayName' | 'default' | 'typeOptions'>;

/**
 * A number parameter's value, bounded by the parameter's own definition, the one place its default
 * and limits are written: unset (undefined, null, '') is its `default`; anything else must be a
 * number (or numeric text) from `minValue` to `maxValue`, whole when `numberPrecision` is 0, or a
 * ValidationIssue names the parameter and the allowed range.
 */
export function boundedNumber(property: NumberProperty, value: unknown): number {
	if (value === undefined || value === null || value === '') return Number(property.default);
	const { minValue: min = -Number.MAX_SAFE_INTEGER, maxValue: max = Number.MAX_SAFE_INTEGER } =
		property.typeOptions ?? {};
	const whole = property.typeOptions?.numberPrecision === 0;
	const number = typeof value === 'number' || typeof value === 'string' ? Number(value) : NaN;
	const blank = typeof value === 'string' && value.trim() === '';
	if (blank || !(number >= min && number <= max) || (whole && !Number.isInteger(number))) {
		const shown = typeof value === 'object' ? JSON.stringify(value) : String(value);
		throw new ValidationIssue(
			property.name,
			`${property.displayName} "${shown}" is not allowed. Allowed values: ${whole ? 'whole numbers' : 'numbers'} from ${min} to ${max}`,
		);
	}
	return number;
}
