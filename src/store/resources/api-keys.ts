import { apiKeyPrefix, generateApiKey, hashApiKey } from '../../domain/api-key.ts';
import { badRequest } from '../../domain/errors.ts';
import { AUDIT_RELATIONS, type ResourceSpec } from './resource-spec.ts';

const timestamp = { type: 'string', maxLength: 64 };

export const apiKeys: ResourceSpec = {
  name: 'api-keys',
  table: 'rh_api_keys',
  label: 'API key',
  attrs: {
    name: { type: 'text', schema: { type: 'string', minLength: 1, maxLength: 255 }, create: 'required' },
    // Defaults to the member whose key makes the request.
    memberId: { type: 'text', schema: { type: 'string' }, update: false },
    prefix: { type: 'text', schema: { type: 'string' }, create: 'no' },
    keyHash: { type: 'text', schema: { type: 'string' }, create: 'no', hidden: true },
    expiresAt: { type: 'timestamp', schema: timestamp, nullable: true, default: () => null },
    lastUsedAt: { type: 'timestamp', schema: timestamp, nullable: true, create: 'no', update: false },
    // Setting it revokes the key from the next request on.
    revokedAt: { type: 'timestamp', schema: timestamp, nullable: true, create: 'no', update: true },
  },
  relations: { ...AUDIT_RELATIONS, member: 'memberId' },
  createAnswers: { key: { type: 'string', description: 'The key itself, for the X-API-Key header: answered on create only, never stored.' } },
  hooks: {
    async beforeInsert(tx, columns, _input, ctx) {
      const memberId = typeof columns.memberId === 'string' ? columns.memberId : ctx.memberId;
      columns.memberId = memberId;
      const member = await tx.selectFrom('rh_members').select('id').where('id', '=', memberId).executeTakeFirst();
      if (!member) throw badRequest(`memberId: no member ${memberId}`);
      const key = generateApiKey();
      columns.keyHash = hashApiKey(key);
      columns.prefix = apiKeyPrefix(key);
      // The key itself is answered once, on create, and never stored.
      return { key };
    },
  },
};
