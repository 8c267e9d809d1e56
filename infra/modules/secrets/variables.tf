variable "project_id" {
  type = string
}

variable "accessors" {
  description = "Per unit (static key): its IAM member and the secrets (by variable name) it may read. An unknown name fails the plan."
  type = map(object({
    member  = string
    secrets = list(string)
  }))
  default = {}
}
