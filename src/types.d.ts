declare module "*.lua" {
  const text: string;
  export default text;
}
declare module "*.sql" {
  const text: string;
  export default text;
}
