variable "project_id" {
  type = string
}

variable "name" {
  description = "Environment name; prefixes account ids (ids are 6 to 30 characters)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][-a-z0-9]{1,19}$", var.name))
    error_message = "name: lowercase letters, digits and dashes, 2 to 20 characters, starting with a letter."
  }
}
