// redis-recipes: typed commands of the recipes Redis module for node-redis
// (a module: `createClient({ modules: { recipes } })`) and ioredis (and any
// client, through `Recipes`), and ShardedTopN, an exact sharded top-N.

export { recipes } from './node-redis';
export type { RecipesModule } from './node-redis';
export { Recipes, RecipesPipeline, addRecipes } from './recipes';
export { ShardedTopN, shardTags, keySlot, crc32 } from './sharded';
export { COMMANDS, isLostKey } from './commands';
export type {
  Arg,
  Names,
  Name,
  Params,
  Result,
  Count,
  Page,
  Row,
  TopnInfo,
  TopnDeclaration,
  ULDeclaration,
  HCDeclaration,
  Increments,
} from './commands';
