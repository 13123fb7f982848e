#include "pod/resources.h"
