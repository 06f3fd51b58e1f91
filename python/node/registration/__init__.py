"""Registration with the AllStarLink registrar: the service over the IAX2 and HTTP machines."""

from node.registration.service import RegistrationService
from node.registration.status import format_addr, registration_json

__all__ = ["RegistrationService", "format_addr", "registration_json"]
